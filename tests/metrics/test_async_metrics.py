"""The metrics' async ``evaluate`` on the local provider awaits the shared model's batcher: concurrent tasks
share forward passes and get the results of the same calls made one at a time."""

from __future__ import annotations

import asyncio

from simkernel.metrics import EvalTestCase, evaluate
from simkernel.metrics.vector_metrics import ReferenceMatchMetric

REFERENCES = ["Paris is the capital of France.", "France's capital city is Paris."]


def cases(n: int, tag: str) -> list[EvalTestCase]:
    return [
        EvalTestCase(
            input=f"question {i}", actual_output=f"Answer {i} ({tag}): the capital is Paris, case {i}"
        )
        for i in range(n)
    ]


def test_concurrent_metric_calls_share_passes_and_score_as_one_at_a_time():
    metric = ReferenceMatchMetric(references=REFERENCES, embedding_provider="local")
    mean_metric = ReferenceMatchMetric(references=REFERENCES, aggregation="mean", embedding_provider="local")
    encoder = metric.provider.encoder
    assert encoder._batcher is not None and mean_metric.provider.encoder is encoder
    sequential = []
    for case in cases(48, "a"):
        sequential.append(asyncio.run(metric.evaluate(case)))
    encoder.cache.clear()
    passes = encoder._batcher.passes

    async def together():
        return await asyncio.gather(*(metric.evaluate(case) for case in cases(48, "a")))

    concurrent = asyncio.run(together())
    assert encoder._batcher.passes - passes < 48
    assert [r["score"] for r in concurrent] == [r["score"] for r in sequential]
    assert [r["success"] for r in concurrent] == [r["success"] for r in sequential]

    # evaluate() over many cases and two metrics: one provider call, the same scores as case by case
    batch = asyncio.run(evaluate(cases(12, "b"), [metric, mean_metric], verbose=False))
    for (_, [result]), case in zip(batch, cases(12, "b"), strict=True):
        alone = [asyncio.run(m.evaluate(case))["score"] for m in (metric, mean_metric)]
        assert [m.score for m in result.metrics_data] == alone
