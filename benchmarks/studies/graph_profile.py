"""Compare ONNX graphs of the same model: round-robin speed, per-operator profile, load time.

Run (after ``simkernel models prepare``)::

    python benchmarks/studies/graph_profile.py GRAPH [GRAPH ...] [--rounds 15] [--threads 2] [--profile]
        [--loads 5]

Every graph gets the same feeds: 8 batches of 32 random token ids, lengths 5, 6, 7, 8, 9, 10, 12, 16
(the short answers of the SAS data), ``--long`` adds batches of 32 x 64 / 128 / 200 tokens. The graphs are
timed round-robin (one pass over the feeds each, in turn, ``--rounds`` times; the minimum is reported),
so a change of the machine's speed hits all alike; outputs are compared with the first graph's.
``--profile`` prints onnxruntime's per-operator kernel times of one forward pass (32 x 8 tokens);
``--loads N`` times N session creations per graph and the first load in a fresh process.
``--custom-ops LIBRARY`` registers a custom-operator library in the timed sessions
(benchmarks/studies/row_quantize_op).
``--single`` times one 6-token text per run (p50 of 300) on ``--threads`` and on 1 intra-op thread, next to
the time this machine takes just to read the graph's dense-layer weights from memory once (``numpy.max``
over an array of the same size, split over ``--threads`` threads): the floor of a single-text forward pass
whose weights do not fit the cache.
Sessions are created at the ``basic`` level, as simkernel loads its pre-optimised bundles.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

SHORT = (5, 6, 7, 8, 9, 10, 12, 16)
LONG = (64, 128, 200)


def session(path: str, threads: int, profile_prefix: str | None = None, custom_ops: str | None = None):
    """A session at the ``basic`` level; ``profile_prefix``: turn onnxruntime's profiler on, writing there;
    ``custom_ops``: a custom-operator library to register (benchmarks/studies/row_quantize_op)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.log_severity_level = 3
    if custom_ops:
        options.register_custom_ops_library(custom_ops)
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def feeds(lengths, batch: int = 32, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for length in lengths:
        ids = rng.integers(1000, 2000, (batch, length)).astype(np.int64)
        out.append(
            {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        )
    return out


def round_robin(paths: list[str], batches, threads: int, rounds: int, custom_ops: str | None = None) -> None:
    sessions = {p: session(p, threads, custom_ops=custom_ops) for p in paths}
    reference = [sessions[paths[0]].run(None, f)[0] for f in batches]
    best = dict.fromkeys(paths, float("inf"))
    for _ in range(rounds):
        for path, sess in sessions.items():
            start = time.perf_counter()
            for f in batches:
                sess.run(None, f)
            best[path] = min(best[path], time.perf_counter() - start)
    texts = sum(f["input_ids"].shape[0] for f in batches)
    for path, sess in sessions.items():
        diff = max(
            float(np.abs(sess.run(None, f)[0] - r).max()) for f, r in zip(batches, reference, strict=True)
        )
        print(
            f"{path}: {best[path] * 1e3:.1f} ms for {texts} texts ({texts / best[path]:.0f}/s), "
            f"max |token embedding - first graph's| {diff:.3g}"
        )


def profile(path: str, threads: int, runs: int = 20) -> None:
    with tempfile.TemporaryDirectory() as tmp:  # onnxruntime writes its profile file; keep it out of the tree
        sess = session(path, threads, profile_prefix=str(Path(tmp) / "profile"))
        (f,) = feeds((8,))
        for _ in range(runs):
            sess.run(None, f)
        with open(sess.end_profiling()) as handle:
            events = json.load(handle)
    total, count = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            total[e["args"]["op_name"]] += e["dur"]
            count[e["args"]["op_name"]] += 1
    print(f"{path}: per-operator kernel time of one 32 x 8 forward pass (mean of {runs})")
    for op, us in total.most_common():
        print(f"  {op:28s} {us / runs / 1e3:7.2f} ms  x{count[op] // runs}")
    print(f"  {'total':28s} {sum(total.values()) / runs / 1e3:7.2f} ms")


FRESH = (
    "import time, onnxruntime as ort, sys\n"
    "o = ort.SessionOptions(); o.intra_op_num_threads = {threads}; o.log_severity_level = 3\n"
    "o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC\n"
    "t = time.perf_counter(); ort.InferenceSession({path!r}, o, providers=['CPUExecutionProvider'])\n"
    "print(time.perf_counter() - t)\n"
)


def load_times(paths: list[str], threads: int, loads: int) -> None:
    times = {p: [] for p in paths}
    for _ in range(loads):
        for path in paths:
            start = time.perf_counter()
            session(path, threads)
            times[path].append(time.perf_counter() - start)
    for path in paths:
        fresh = subprocess.run(
            [sys.executable, "-c", FRESH.format(path=path, threads=threads)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        t = sorted(times[path])
        print(
            f"{path}: load best {t[0]:.3f} s, median {t[len(t) // 2]:.3f} s; "
            f"first load in a fresh process {float(fresh):.3f} s"
        )


def dense_weight_bytes(path: str) -> int:
    """Bytes of the weight matrices the graph's matrix products read on every forward pass (the
    embedding tables, of which a pass gathers a few rows, are not counted)."""
    import onnx
    from onnx.helper import tensor_dtype_to_np_dtype

    model = onnx.load(path, load_external_data=False)
    initializers = {i.name: i for i in model.graph.initializer}
    total = 0
    for node in model.graph.node:
        if "MatMul" in node.op_type or node.op_type == "Gemm":
            weight = initializers.get(node.input[1]) if len(node.input) > 1 else None
            if weight is not None:
                total += int(np.prod(weight.dims)) * tensor_dtype_to_np_dtype(weight.data_type).itemsize
    return total


def single_text(paths: list[str], threads: int, runs: int = 300) -> None:
    (f,) = feeds((6,), batch=1)
    pool = ThreadPoolExecutor(threads)
    for path in paths:
        weights = dense_weight_bytes(path)
        array = np.ones(weights // 4, dtype=np.float32)
        parts = np.array_split(array, threads)
        read = float("inf")
        for _ in range(30):
            start = time.perf_counter()
            list(pool.map(np.max, parts))
            read = min(read, time.perf_counter() - start)
        line = [
            f"{path}: reading its {weights / 2**20:.0f} MB once takes {read * 1e3:.2f} ms "
            f"({weights / read / 1e9:.1f} GB/s)"
        ]
        for n in sorted({threads, 1}, reverse=True):
            sess = session(path, n)
            for _ in range(20):
                sess.run(None, f)
            laps = []
            for _ in range(runs):
                start = time.perf_counter()
                sess.run(None, f)
                laps.append(time.perf_counter() - start)
            line.append(f"one text, {n} thread(s): p50 {np.median(laps) * 1e3:.2f} ms")
        print("; ".join(line))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--long", action="store_true", help="also time 32 x 64/128/200-token batches")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--loads", type=int, default=0)
    parser.add_argument("--single", action="store_true", help="single-text latency vs the weight-read floor")
    parser.add_argument("--custom-ops", metavar="LIBRARY", help="register this custom-operator library first")
    args = parser.parse_args()
    if args.single:
        single_text(args.graphs, args.threads)
        return
    round_robin(args.graphs, feeds(SHORT), args.threads, args.rounds, args.custom_ops)
    if args.long:
        round_robin(args.graphs, feeds(LONG), args.threads, max(2, args.rounds // 4), args.custom_ops)
    if args.profile:
        for path in args.graphs:
            profile(path, args.threads)
    if args.loads:
        load_times(args.graphs, args.threads, args.loads)


if __name__ == "__main__":
    main()
