"""Round-robin speed of ONNX graphs, with the RowQuantize custom-operator library registered.

    python compare_graphs.py LIBRARY.so GRAPH [GRAPH ...]

Same feeds as ``benchmarks/graph_profile.py`` (8 batches of 32 short texts); best of 15 rounds.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from graph_profile import SHORT, feeds  # noqa: E402


def session(path: str, library: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.register_custom_ops_library(library)
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def main() -> None:
    library, paths = sys.argv[1], sys.argv[2:]
    sessions = {p: session(p, library) for p in paths}
    batches = feeds(SHORT)
    texts = sum(f["input_ids"].shape[0] for f in batches)
    reference = [sessions[paths[0]].run(None, f)[0] for f in batches]
    best = dict.fromkeys(paths, float("inf"))
    for _ in range(15):
        for path, sess in sessions.items():
            start = time.perf_counter()
            for f in batches:
                sess.run(None, f)
            best[path] = min(best[path], time.perf_counter() - start)
    for path, sess in sessions.items():
        diff = max(
            float(np.abs(sess.run(None, f)[0] - r).max()) for f, r in zip(batches, reference, strict=True)
        )
        print(f"{path}: {best[path] * 1e3:.1f} ms, {texts / best[path]:.0f} texts/s, max |diff| {diff:.3g}")


if __name__ == "__main__":
    main()
