"""Shared instances under load: many threads at once, long runs, forked and spawned children.

- 16 threads x 1,000 mixed calls (TextEncoder.encode, SASEvaluator.run, ReferenceMatchMetric through
  evaluate, kernel functions) on shared instances give results bit-identical to the same calls made
  one after the other, from the same cache state. From cold caches filled by the threads at once they
  agree within 1e-6: an fp32 embedding moves by up to ~3e-8 with the padding of its batch, and which
  call embeds a text first (and so its batch-mates) depends on thread timing;
- 100,000 SASEvaluator.run calls on 2 pairs: resident memory grows by at most 10 MB, and the numbers of
  open file descriptors and of threads do not change;
- a process that loaded a model and then forks (multiprocessing "fork"), and children started with
  "spawn", score as the parent does; a warmed-up evaluator pickled to a ProcessPoolExecutor's worker too.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from simkernel import EvalTestCase, ReferenceMatchMetric, evaluate, kernels
from simkernel.components.evaluators import SASEvaluator
from simkernel.runtime import TextEncoder, clear_shared_instances, get_text_encoder

THREADS = 16
CALLS_PER_THREAD = 1_000
TEXTS = [
    "Berlin",
    "Berlin is the capital of Germany.",
    "the capital of Germany",
    "Paris",
    "Lyon is a city in France.",
    "Leo Tolstoy wrote War and Peace.",
    "Лев Толстой",
    "Толстой написал «Войну и мир».",
    "Столица Германии — Берлин.",
    "北京",
    "北京市是中国的首都。",
    "法国的首都是巴黎。",
    "",
    "a much longer answer that talks about several things at once, the weather, the city and the river",
]


def call_plan(seed: int) -> list[tuple]:
    """CALLS_PER_THREAD calls (kind, arguments) for one thread, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    plan = []
    for _ in range(CALLS_PER_THREAD):
        kind = rng.choice(["encode", "sas", "metric", "kernel"], p=[0.05, 0.45, 0.2, 0.3])
        picks = [TEXTS[i] for i in rng.integers(len(TEXTS), size=4)]
        if kind == "encode":
            plan.append((kind, picks[:1]))
        elif kind == "sas":
            n = 1 + rng.integers(2)
            plan.append((kind, (picks[:n], picks[2 : 2 + n])))
        elif kind == "metric":
            plan.append((kind, (picks[0], picks[1:3], ("max", "mean")[rng.integers(2)])))
        else:
            plan.append((kind, int(rng.integers(1 << 30))))
    return plan


class Calls:
    """Shared instances made from cold caches, and one method per kind of call."""

    def __init__(self, warm: bool) -> None:
        clear_shared_instances()
        self.encoder = TextEncoder(cache_size=0)  # every encode call runs the model
        self.sas = SASEvaluator(model="sentence-transformers/all-MiniLM-L6-v2")  # the shared, cached one
        self.sas.warm_up()
        if warm:  # the same cache state for every phase: each text embedded once, in one call
            get_text_encoder().encode(TEXTS)

    def __call__(self, kind: str, args):
        if kind == "encode":
            return self.encoder.encode(args)
        if kind == "sas":
            truths, predictions = args
            return self.sas.run(ground_truth_answers=truths, predicted_answers=predictions)[
                "individual_scores"
            ]
        if kind == "metric":
            output, references, aggregation = args
            metric = ReferenceMatchMetric(
                references=references, aggregation=aggregation, embedding_provider="local"
            )
            [(_, [result])] = asyncio.run(
                evaluate([EvalTestCase(input="q", actual_output=output)], [metric], verbose=False)
            )
            return result.metrics_data[0].score
        rng = np.random.default_rng(args)
        a, b = rng.standard_normal((2, 6, 384), dtype=np.float32)
        offsets = np.array([0, 2, 2, 5, 6, 6, 6], np.int64)
        return kernels.paired_cosine(a, b), kernels.cosine_reduce(a, b, offsets, reduce=("max", "mean"))


def flat(x) -> np.ndarray:
    """A call's result (an array, a list of scores, a score, or a tuple of those) as one float64 vector."""
    if isinstance(x, tuple):
        return np.concatenate([flat(v) for v in x])
    return np.ravel(np.asarray(x, dtype=np.float64))


def same(x, y) -> bool:
    if isinstance(x, tuple):
        return all(same(a, b) for a, b in zip(x, y, strict=True))
    return np.array_equal(np.asarray(x), np.asarray(y))


def run_threads(calls: Calls, plans: list[list[tuple]]) -> list[list]:
    """Each plan on its own thread, all started together; the results per thread."""
    results: list[list | None] = [None] * len(plans)
    errors: list[BaseException] = []
    start = threading.Barrier(len(plans))

    def worker(t: int) -> None:
        try:
            start.wait()
            results[t] = [calls(kind, args) for kind, args in plans[t]]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return results


def test_16_threads_of_mixed_calls_match_the_serial_results_bit_for_bit(minilm):
    plans = [call_plan(seed) for seed in range(THREADS)]
    calls = Calls(warm=True)
    serial = [[calls(kind, args) for kind, args in plan] for plan in plans]
    concurrent = run_threads(Calls(warm=True), plans)
    for t in range(THREADS):
        for i, (kind, _) in enumerate(plans[t]):
            assert same(concurrent[t][i], serial[t][i]), f"thread {t} call {i} ({kind}) differs"
    clear_shared_instances()


def test_16_threads_filling_cold_caches_agree_with_serial_calls(minilm):
    plans = [call_plan(seed)[:200] for seed in range(100, 100 + THREADS)]
    calls = Calls(warm=False)
    serial = [[calls(kind, args) for kind, args in plan] for plan in plans]
    concurrent = run_threads(Calls(warm=False), plans)
    for t in range(THREADS):
        for i, (kind, _) in enumerate(plans[t]):
            np.testing.assert_allclose(
                flat(concurrent[t][i]), flat(serial[t][i]), atol=1e-6, err_msg=f"thread {t} call {i} ({kind})"
            )
    clear_shared_instances()


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc (Linux)")
def test_100000_runs_leak_no_memory_descriptors_or_threads(minilm):
    sas = SASEvaluator(model=minilm)
    sas.warm_up()
    truths, predictions = ["Berlin", "Лев Толстой"], ["Berlin is the capital of Germany.", "Толстой"]
    expected = sas.run(ground_truth_answers=truths, predicted_answers=predictions)
    for _ in range(2_000):  # allocator pools and caches reach their steady state
        sas.run(ground_truth_answers=truths, predicted_answers=predictions)
    rss, fds, threads = _rss_bytes(), len(os.listdir("/proc/self/fd")), threading.active_count()
    tasks = len(os.listdir("/proc/self/task"))
    for _ in range(100_000):
        result = sas.run(ground_truth_answers=truths, predicted_answers=predictions)
    assert result["individual_scores"] == expected["individual_scores"]
    growth_mb = (_rss_bytes() - rss) / 1e6
    assert growth_mb <= 10.0, f"RSS grew by {growth_mb:.1f} MB over 100,000 runs"
    assert len(os.listdir("/proc/self/fd")) == fds
    assert threading.active_count() == threads
    assert len(os.listdir("/proc/self/task")) == tasks  # native threads (onnxruntime's) too


GT = ["Berlin is the capital of Germany.", "Лев Толстой", "北京"] * 12
PR = ["The capital of Germany is Berlin.", "Толстой", "北京市"] * 12


def _score_in_child(queue, sas) -> None:
    if sas is None:  # spawn: a fresh interpreter loads the model itself
        sas = SASEvaluator(model="sentence-transformers/all-MiniLM-L6-v2")
        sas.warm_up()
    extra = ["a text the parent never embedded", "another one, in the child only"]
    queue.put(
        sas.run(ground_truth_answers=GT + extra[:1], predicted_answers=PR + extra[1:])["individual_scores"]
    )


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_forked_and_spawned_children_score_as_the_parent(minilm, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method on this platform")
    sas = SASEvaluator(model=minilm)
    sas.warm_up()
    extra = ["a text the parent never embedded", "another one, in the child only"]
    expected = sas.run(ground_truth_answers=GT + extra[:1], predicted_answers=PR + extra[1:])[
        "individual_scores"
    ]
    clear_shared_instances()
    sas = SASEvaluator(model=minilm)
    sas.warm_up()
    sas.run(ground_truth_answers=GT, predicted_answers=PR)  # the parent's worker pool and cache exist
    context = multiprocessing.get_context(method)
    queue = context.Queue()
    child = context.Process(target=_score_in_child, args=(queue, sas if method == "fork" else None))
    child.start()
    try:
        got = queue.get(timeout=120)
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_a_process_pool_runs_a_warmed_up_evaluator(minilm):
    """The evaluator travels pickled (without its model and lock) and loads the model in the worker."""
    sas = SASEvaluator(model=minilm)
    sas.warm_up()
    expected = sas.run(ground_truth_answers=GT, predicted_answers=PR)["individual_scores"]
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        got = pool.submit(sas.run, GT, PR).result(timeout=120)["individual_scores"]
    np.testing.assert_allclose(got, expected, atol=1e-6)
