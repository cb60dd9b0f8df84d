"""Latency and throughput of single-pair callers: simkernel with its batcher on and off, beside Haystack's
SASEvaluator and sentence-transformers under the same load, in one run.

    python benchmarks/bench_latency.py [--pairs 480] [--rounds 2] [--single 200]

Every text is new to the process where it is scored: the pairs are made of the distinct texts of
tests/data/sas (text 2i against text 2i+1, so no text repeats within a turn and no cache or in-call dedup
helps any engine), and simkernel's embedding cache is cleared before each turn. Engines: ``simkernel`` (the shared evaluator, batcher
on: the default), ``simkernel, batcher off`` (``SIMKERNEL_BATCHING=0``: the same model, a pass per call),
``Haystack`` (haystack-ai's SASEvaluator, sentence-transformers on torch CPU), ``sentence-transformers``
(``encode`` of the pair's two texts). All on all-MiniLM-L6-v2 fp32 with their default threads (one per core).

Cases:

- ``one new text`` / ``one new pair``: p50 and p99 of ``encode([text])``, of ``encode([a, b])`` (the pair's
  texts in one call) and of ``run()`` on one pair, calls one after another; the target is ``run()`` within
  1.2x of ``encode([a, b])``.
- ``N threads``: N threads share one evaluator, each calling ``run()`` on one pair at a time, ``--pairs``
  pairs in all; pairs/s, and p50 / p99 of a call.
- ``N tasks``: N asyncio tasks on one event loop, each awaiting ``run_async()`` on one pair at a time
  (Haystack has no ``run_async``: its tasks await ``asyncio.to_thread(run)``, as ``AsyncPipeline`` does
  for a component without one).
- ``one call``: the same pairs in ONE ``run()`` call: the ceiling of pairs/s. It is timed on each case's
  own pairs, right after the case: the SAS texts' lengths differ from one chunk of pairs to the next (their
  mean length ranges over 2x), so a case's share of the ceiling is its pairs/s over the one call of the
  SAME pairs, the median over rounds.

The engines take turns in every round; a table cell is the median over rounds. Prints the Markdown tables
of docs/benchmarks.md with the machine line.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import threading
import time
from collections.abc import Callable

import numpy as np

from support import MODEL_ID, checkpoint, distinct_texts, machine

COUNTS = (1, 4, 16, 64)


def evaluators() -> dict[str, object]:
    """The warmed-up evaluators by engine name (simkernel's two share nothing: two loaded models)."""
    from haystack.components.evaluators import SASEvaluator as HaystackSAS
    from haystack.utils import ComponentDevice

    from simkernel.components.evaluators import SASEvaluator

    out: dict[str, object] = {}
    out["simkernel"] = SASEvaluator(model=MODEL_ID)
    out["simkernel"].warm_up()
    os.environ["SIMKERNEL_BATCHING"] = "0"
    try:
        out["simkernel, batcher off"] = SASEvaluator(model=MODEL_ID)
        out["simkernel, batcher off"].warm_up()
    finally:
        del os.environ["SIMKERNEL_BATCHING"]
    assert out["simkernel"]._similarity_model._batcher is not None
    assert out["simkernel, batcher off"]._similarity_model._batcher is None
    out["Haystack"] = HaystackSAS(model=checkpoint(), device=ComponentDevice.from_str("cpu"))
    out["Haystack"].warm_up()
    return out


def forget(evaluator) -> None:
    """Clear simkernel's embedding cache (nothing for Haystack): every text is new again."""
    model = getattr(evaluator, "_similarity_model", None)
    if model is not None and hasattr(model, "cache"):
        model.cache.clear()


def percentiles(seconds: list[float]) -> tuple[float, float]:
    ms = np.asarray(seconds) * 1000.0
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def sequential(call: Callable[[int], object], n: int) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - start)
    return times


def threaded(evaluator, pairs, workers: int) -> tuple[float, list[float]]:
    """(pairs/s, per-call seconds) of ``workers`` threads sharing ``evaluator``, one pair per call."""
    latencies: list[float] = []
    lock = threading.Lock()
    shares = [pairs[k::workers] for k in range(workers)]

    def worker(share):
        mine = []
        for truth, prediction in share:
            start = time.perf_counter()
            evaluator.run(ground_truth_answers=[truth], predicted_answers=[prediction])
            mine.append(time.perf_counter() - start)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(share,)) for share in shares]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(pairs) / (time.perf_counter() - start), latencies


def tasks(evaluator, pairs, count: int) -> tuple[float, list[float]]:
    """(pairs/s, per-call seconds) of ``count`` asyncio tasks, one pair per awaited call."""
    latencies: list[float] = []
    if hasattr(evaluator, "run_async"):

        def one(truth, prediction):
            return evaluator.run_async(ground_truth_answers=[truth], predicted_answers=[prediction])
    else:

        def one(truth, prediction):
            return asyncio.to_thread(
                evaluator.run, ground_truth_answers=[truth], predicted_answers=[prediction]
            )

    async def task(share):
        for truth, prediction in share:
            start = time.perf_counter()
            await one(truth, prediction)
            latencies.append(time.perf_counter() - start)

    async def main():
        await asyncio.gather(*(task(pairs[k::count]) for k in range(count)))

    start = time.perf_counter()
    asyncio.run(main())
    return len(pairs) / (time.perf_counter() - start), latencies


def one_call(evaluator, pairs) -> float:
    start = time.perf_counter()
    evaluator.run(ground_truth_answers=[t for t, _ in pairs], predicted_answers=[p for _, p in pairs])
    return len(pairs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=480, help="pairs per concurrency case and turn")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every case, engines taking turns")
    parser.add_argument("--single", type=int, default=200, help="calls per turn of the one-text/pair cases")
    args = parser.parse_args()

    from sentence_transformers import SentenceTransformer

    texts = distinct_texts()
    all_pairs = [(texts[2 * i], texts[2 * i + 1]) for i in range(len(texts) // 2)]
    engines = evaluators()
    st = SentenceTransformer(checkpoint(), device="cpu")
    names = list(engines)
    sk = engines["simkernel"]._similarity_model
    off = engines["simkernel, batcher off"]._similarity_model
    # ---- one new text / one new pair, calls in turn
    single: dict[str, list[tuple[float, float]]] = {}
    offset = 0
    for r in range(args.rounds):
        chunk = all_pairs[offset : offset + args.single]
        offset += args.single  # every round its own pairs; each case turn starts from cleared caches
        cases: dict[str, Callable[[int], object]] = {
            "simkernel: encode 1 text": lambda i, c=chunk: sk.encode([c[i][0]]),
            "simkernel: encode a pair's 2 texts": lambda i, c=chunk: sk.encode([c[i][1], c[i][0]]),
            "simkernel, batcher off: encode 1 text": lambda i, c=chunk: off.encode([c[i][0]]),
            "simkernel: run() on 1 pair": lambda i, c=chunk: engines["simkernel"].run([c[i][0]], [c[i][1]]),
            "simkernel, batcher off: run() on 1 pair": lambda i, c=chunk: engines[
                "simkernel, batcher off"
            ].run([c[i][0]], [c[i][1]]),
            "sentence-transformers: encode 1 text": lambda i, c=chunk: st.encode([c[i][0]]),
            "sentence-transformers: encode a pair's 2 texts": lambda i, c=chunk: st.encode(
                [c[i][0], c[i][1]]
            ),
            "Haystack: run() on 1 pair": lambda i, c=chunk: engines["Haystack"].run([c[i][0]], [c[i][1]]),
        }
        order = list(cases)
        for name in order[r % len(order) :] + order[: r % len(order)]:
            forget(engines["simkernel"])
            forget(engines["simkernel, batcher off"])
            single.setdefault(name, []).append(percentiles(sequential(cases[name], len(chunk))))
    # ---- concurrency
    rows: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    ceiling: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for kind, runner in (("threads", threaded), ("tasks", tasks)):
            for count in COUNTS:
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    chunk = all_pairs[offset : offset + args.pairs]
                    offset = (offset + args.pairs) % (len(all_pairs) - args.pairs)
                    forget(engines[name])
                    rate, latencies = runner(engines[name], chunk, count)
                    p50, p99 = percentiles(latencies)
                    forget(engines[name])  # the ceiling of THESE pairs: the SAS texts' lengths vary by chunk
                    top = one_call(engines[name], chunk)
                    rows.setdefault((f"{count} {kind}", name), []).append((rate, p50, p99, rate / top))
                    ceiling.setdefault(name, []).append(top)

    def med(values):
        return statistics.median(values)

    print("| call, one after another | p50 ms | p99 ms |")
    print("|---|---:|---:|")
    for name, values in single.items():
        print(f"| {name} | {med([v[0] for v in values]):.2f} | {med([v[1] for v in values]):.2f} |")
    pair = med([v[0] for v in single["simkernel: run() on 1 pair"]])
    texts = med([v[0] for v in single["simkernel: encode a pair's 2 texts"]])
    print(f"\nrun() on 1 pair / encode of its 2 texts, p50: {pair / texts:.2f}x (target <= 1.2x)\n")

    header = " | ".join(f"{n} pairs/s, p50, p99 ms" for n in names)
    print(f"| callers | {header} |")
    print("|---|" + "---:|" * len(names))
    for kind in ("threads", "tasks"):
        for count in COUNTS:
            cells = []
            for name in names:
                values = rows[(f"{count} {kind}", name)]
                rate, p50, p99 = (med([v[i] for v in values]) for i in range(3))
                cells.append(f"{rate:.0f}, {p50:.0f}, {p99:.0f}")
            print(f"| {count} {kind} | " + " | ".join(cells) + " |")
    print(
        "| one call of each case's pairs (median) | "
        + " | ".join(f"{med(ceiling[n]):.0f} pairs/s" for n in names)
        + " |"
    )

    print()
    for kind in ("threads", "tasks"):
        for count in (16, 64):
            on = rows[(f"{count} {kind}", "simkernel")]
            off = rows[(f"{count} {kind}", "simkernel, batcher off")]
            share = med([v[3] for v in on])
            p99 = med([v[2] for v in on]) / med([v[2] for v in off])
            print(
                f"- {count} {kind}: batcher on reaches {share:.0%} of one call's pairs/s (target >= 80%); "
                f"its p99 is {p99:.2f}x the batcher-off p99 (target <= 0.5x); "
                f"{med([v[0] for v in on]) / med([v[0] for v in rows[(f'{count} {kind}', 'Haystack')]]):.1f}x Haystack's pairs/s"
            )
    print(f"\nMachine: {machine()}; {args.pairs} pairs per case, {args.rounds} rounds, medians.")


if __name__ == "__main__":
    main()
