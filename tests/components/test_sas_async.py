"""SASEvaluator.run_async and AnswerExactMatchEvaluator.run_async: run's outputs bit for bit, shared passes
across concurrent tasks, and an event loop that keeps ticking while 64 tasks score."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from tests.components.conftest import require_stored_model

from simkernel.components.evaluators import AnswerExactMatchEvaluator, SASEvaluator
from simkernel.runtime import get_text_encoder

CROSS = "simkernel-test/minilm-l6-cross-encoder"


@pytest.fixture(scope="module")
def pairs(sas_pairs) -> list[tuple[str, str]]:
    return [(a, b) for _, a, b, _ in sas_pairs[:400]]


def test_run_async_gives_runs_outputs_bit_for_bit(minilm, pairs):
    truths = [b for _, b in pairs[:50]]
    predictions = [a for a, _ in pairs[:50]]
    several = [[t, f"{t} indeed"] if i % 3 == 0 else t for i, t in enumerate(truths)]
    for ground_truths in (truths, several):
        evaluator = SASEvaluator(model=minilm, batch_size=8)
        got = asyncio.run(evaluator.run_async(ground_truths, predictions))
        want = SASEvaluator(model=minilm, batch_size=8).run(ground_truths, predictions)
        assert got["individual_scores"] == want["individual_scores"]
        assert got["score"] == want["score"] and type(got["score"]) is type(want["score"])
    assert asyncio.run(SASEvaluator(model=minilm).run_async([], [])) == {
        "score": 0.0,
        "individual_scores": [0.0],
    }
    with pytest.raises(ValueError, match="The number of predictions and labels must be the same."):
        asyncio.run(SASEvaluator(model=minilm).run_async(["a"], []))


def test_run_async_on_a_cross_encoder_gives_runs_outputs(pairs):
    model = require_stored_model(CROSS)
    truths = [b for _, b in pairs[:30]]
    predictions = [a for a, _ in pairs[:30]]
    got = asyncio.run(SASEvaluator(model=model).run_async(truths, predictions))
    want = SASEvaluator(model=model).run(truths, predictions)
    assert got["individual_scores"] == want["individual_scores"]


def test_concurrent_tasks_share_passes_and_score_as_alone(minilm, pairs):
    evaluator = SASEvaluator(model=minilm)
    evaluator.warm_up()
    alone = [SASEvaluator(model=minilm).run([b], [a])["individual_scores"][0] for a, b in pairs[100:164]]
    encoder = get_text_encoder(minilm)
    encoder.cache.clear()
    passes = encoder._batcher.passes

    async def scenario():
        return await asyncio.gather(*(evaluator.run_async([b], [a]) for a, b in pairs[100:164]))

    results = asyncio.run(scenario())
    assert [r["individual_scores"][0] for r in results] == alone
    assert encoder._batcher.passes - passes < 64  # 64 tasks, fewer passes


def _tick_lags(score_all) -> list[float]:
    """The lateness (s) of each tick of a 1 ms ticker on the event loop while ``score_all()`` runs on it."""

    async def scenario():
        lags: list[float] = []
        stop = asyncio.Event()

        async def ticker():
            while not stop.is_set():
                start = time.perf_counter()
                await asyncio.sleep(0.001)
                lags.append(time.perf_counter() - start - 0.001)

        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        await score_all()
        stop.set()
        await tick
        return lags

    return asyncio.run(scenario())


def test_the_event_loop_keeps_ticking_while_64_tasks_score(minilm, pairs):
    """A 1 ms ticker stays within 10 ms of its time while 64 tasks score new pairs with run_async: its
    95th-percentile lateness is at most 10 ms and no tick is over 100 ms late. The probe is shown to catch
    a blocked loop: the same scoring with the blocking run() on the loop makes one tick over 100 ms late.
    A busy machine (the suite's other half on the same two cores) can preempt the loop's thread without
    any blocking, hence the percentile, and five tries of 64 new pairs each; a blocking implementation
    fails every one (each try holds the loop for 64 passes). benchmarks/bench_latency.py reports the
    largest lateness on a quiet machine."""
    evaluator = SASEvaluator(model=minilm)
    evaluator.warm_up()
    encoder = get_text_encoder(minilm)
    batches = [pairs[64 * k : 64 * (k + 1)] for k in range(6)]

    def blocking(batch):
        async def score_all():
            async def one(a, b):
                evaluator.run([b], [a])

            encoder.cache.clear()
            await asyncio.gather(*(one(a, b) for a, b in batch))

        return score_all

    def awaiting(batch):
        async def score_all():
            encoder.cache.clear()
            await asyncio.gather(*(evaluator.run_async([b], [a]) for a, b in batch))

        return score_all

    def late(lags: list[float]) -> tuple[float, float]:
        return float(np.percentile(lags, 95)), max(lags)

    assert late(_tick_lags(blocking(batches[0])))[1] > 0.1
    tries = []
    for batch in batches[1:]:
        tries.append(late(_tick_lags(awaiting(batch))))
        if tries[-1][0] <= 0.010 and tries[-1][1] <= 0.1:
            break
    assert any(p95 <= 0.010 and worst <= 0.1 for p95, worst in tries), tries


def test_answer_exact_match_run_async_is_run():
    evaluator = AnswerExactMatchEvaluator()
    got = asyncio.run(evaluator.run_async(["Berlin", "Paris"], ["Berlin", "Lyon"]))
    assert (
        got
        == evaluator.run(["Berlin", "Paris"], ["Berlin", "Lyon"])
        == {"individual_scores": [1, 0], "score": 0.5}
    )
    with pytest.raises(ValueError, match="ground_truth_answers and predicted_answers must be provided."):
        asyncio.run(evaluator.run_async([], []))


def test_a_call_is_one_forward_pass_over_all_its_texts(minilm):
    """run() / run_async() on one new pair, and a metric on one output and its references: one pass of the
    shared model over every text of the call (both sides, all references), never a pass per side."""
    from simkernel.metrics import EvalTestCase
    from simkernel.metrics.vector_metrics import ReferenceMatchMetric

    evaluator = SASEvaluator(model=minilm)
    evaluator.warm_up()
    batcher = get_text_encoder(minilm)._batcher
    calls = [
        lambda: evaluator.run(["a ground truth of several more words"], ["one prediction"]),
        lambda: asyncio.run(evaluator.run_async(["another ground truth, longer"], ["short"])),
        lambda: evaluator.run([["truth one", "truth number two is longer"]], ["the prediction"]),
    ]
    metric = ReferenceMatchMetric(
        references=["ref one", "the second reference, longer"], embedding_provider="local"
    )
    calls.append(
        lambda: asyncio.run(metric.evaluate(EvalTestCase(input="q", actual_output="an output text")))
    )
    for call in calls:
        before = batcher.passes
        call()
        assert batcher.passes - before == 1
