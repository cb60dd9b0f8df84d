"""Data-parallel batches vs intra-op threads, measured side by side (benchmarks/studies/README.md, the
data-parallel row).

    python benchmarks/studies/data_parallel_study.py [--threads 2] [--rounds 5]

1. ``TextEncoder`` on 2,000 distinct SAS answers, fp32 and int8: ``threads`` worker threads running whole
   batches on a single-threaded twin session (what simkernel does) vs one batch at a time on ``threads``
   intra-op threads (the same encoder with ``_session.workers = 1``); best of ``--rounds``, round-robin;
   the largest |difference| between the two paths' embeddings.
2. Raw onnxruntime sessions of the store bundle, batches of 32 x L random tokens for L = 6 ... 192: the same
   comparison without simkernel's tokenization and pooling, to see where the gain fades.
3. ``--sas-breakdown``: where the time of the 5,025 SAS pairs goes (fp32, one batch at a time): the
   distinct texts' token counts and the forward time per bucket of batch length.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from graph_profile import feeds, session  # noqa: E402

from support import alternate, distinct_texts, sas_pairs, store_bundle  # noqa: E402


def encoder_level(threads: int, rounds: int) -> None:
    from simkernel.runtime import TextEncoder

    texts = distinct_texts(2000, labelled=True)
    for precision in ("fp32", "int8"):
        intra_op = TextEncoder(precision=precision, threads=threads, cache_size=0)
        intra_op._session.workers = 1  # one batch at a time, every operator split over the threads
        parallel = TextEncoder(precision=precision, threads=threads, cache_size=0)
        diff = float(np.abs(intra_op.encode(texts) - parallel.encode(texts)).max())
        engines = {
            "intra-op": lambda e=intra_op: e.encode(texts),
            "data-parallel": lambda e=parallel: e.encode(texts),
        }
        best = {name: min(t) for name, t in alternate(engines, rounds).items()}
        print(
            f"{precision}: intra-op {len(texts) / best['intra-op']:.0f}/s, data-parallel "
            f"{len(texts) / best['data-parallel']:.0f}/s, "
            f"gain {best['intra-op'] / best['data-parallel']:.2f}x, max |difference| {diff:.2g}",
            flush=True,
        )


def session_level(threads: int, rounds: int) -> None:
    pool = ThreadPoolExecutor(threads)
    bundle = store_bundle()
    for graph in ("model.onnx", "model_int8.onnx"):
        path = str(bundle / graph)
        together, single = session(path, threads), session(path, 1)
        for length in (6, 12, 24, 48, 96, 192):
            batches = feeds((length,) * max(threads, min(16, 1536 // length)))
            texts = sum(f["input_ids"].shape[0] for f in batches)
            a = b = float("inf")
            for _ in range(rounds):
                start = time.perf_counter()
                for f in batches:
                    together.run(None, f)
                a = min(a, time.perf_counter() - start)
                start = time.perf_counter()
                list(pool.map(single.run, [None] * len(batches), batches))
                b = min(b, time.perf_counter() - start)
            print(
                f"{graph} 32 x {length}: intra-op {texts / a:.0f}/s, data-parallel {texts / b:.0f}/s, "
                f"gain {a / b:.2f}x",
                flush=True,
            )


def sas_breakdown() -> None:
    from simkernel.runtime import TextEncoder
    from simkernel.runtime.inference.tokenizer import length_sorted_batches

    pairs = sas_pairs()
    texts = list(dict.fromkeys([p[0] for p in pairs] + [p[1] for p in pairs]))
    encoder = TextEncoder(precision="fp32", threads=2, cache_size=0)
    encodings = encoder._tokenizer.encode(texts)
    lengths = np.array([len(e.ids) for e in encodings])
    batches = length_sorted_batches(encodings, 32)
    padded = sum(len(b) * int(lengths[b].max()) for b in batches)
    print(
        f"{len(texts)} distinct texts, mean {lengths.mean():.1f} tokens, {lengths.sum()} tokens "
        f"({padded} padded); over 32 tokens: {(lengths > 32).sum()}, over 128: {(lengths > 128).sum()}"
    )
    longest, seconds = [], []
    for rows in batches:
        batch = encoder._tokenizer.pad_batch([encodings[i] for i in rows])
        start = time.perf_counter()
        encoder._session.run(batch.input_ids, batch.attention_mask, batch.token_type_ids)
        seconds.append(time.perf_counter() - start)
        longest.append(int(lengths[rows].max()))
    longest_a, seconds_a = np.array(longest), np.array(seconds)
    for low, high in ((0, 16), (16, 32), (32, 64), (64, 128), (128, 512)):
        inside = (longest_a > low) & (longest_a <= high)
        print(
            f"batches whose longest text has ({low}, {high}] tokens: {inside.sum()}, "
            f"{seconds_a[inside].sum():.2f} s"
        )
    print(f"all: {seconds_a.sum():.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sas-breakdown", action="store_true", help="only part 3")
    args = parser.parse_args()
    if args.sas_breakdown:
        sas_breakdown()
        return
    encoder_level(args.threads, args.rounds)
    session_level(args.threads, args.rounds)


if __name__ == "__main__":
    main()
