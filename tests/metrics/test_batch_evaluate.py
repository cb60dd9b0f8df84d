"""``evaluate`` over many test cases: one embedding pass over the distinct texts of the batch, one kernel
call per metric, results in order and identical to case-by-case evaluation; other metrics per case."""

from __future__ import annotations

import asyncio
import dataclasses
from unittest import mock

import numpy as np
import pytest
from metrics_support import eval_lib_formula

from simkernel import EvalTestCase, ReferenceMatchMetric, SemanticSimilarityMetric, evaluate
from simkernel.metrics import MetricResult, TestCaseResult

REFS = [
    "Reset your password from the login page.",
    "Use the 'Forgot password?' link on the sign-in page.",
    "Contact support if you cannot log in.",
    "Пароль можно восстановить через ссылку в письме.",
    "重置密码请点击登录页面上的链接。",
]
OUTPUTS = [
    "Click 'Forgot password?' on the login page and follow the email.",
    "Our company was founded in 2020.",
    "Нажмите «Забыли пароль?» на странице входа.",
    "点击登录页面上的忘记密码链接。",
    "Reset your password from the login page.",  # also a reference: embedded once
    "",
]


def make_cases(n: int) -> list[EvalTestCase]:
    return [
        EvalTestCase(
            input=f"question {i}",
            actual_output=OUTPUTS[i % len(OUTPUTS)],
            expected_output=REFS[i % 3] if i % 4 else None,
        )
        for i in range(n)
    ]


def test_one_encode_call_over_the_distinct_texts(spy_encoder):
    cases = make_cases(40)
    rm_max = ReferenceMatchMetric(references=REFS, embedding_provider="local")
    rm_mean = ReferenceMatchMetric(references=REFS[:2], aggregation="mean", embedding_provider="local")
    semantic = SemanticSimilarityMetric(embedding_provider="local")
    spy = spy_encoder(rm_max.provider)
    for metric in (rm_mean, semantic):  # every instance shares the model: point them all at the spy
        metric.provider._encoder = spy

    asyncio.run(evaluate(cases, [rm_max, rm_mean, semantic], verbose=False))

    distinct = set(OUTPUTS) | set(REFS) | {c.expected_output or "" for c in cases}
    assert len(spy.calls) == 1
    assert sorted(spy.calls[0]) == sorted(distinct)  # each distinct text once, across cases and metrics


def test_results_in_order_and_equal_to_case_by_case(spy_encoder, st_model):
    cases = make_cases(30)
    metrics = [
        ReferenceMatchMetric(threshold=0.6, references=REFS, embedding_provider="local"),
        SemanticSimilarityMetric(threshold=0.5, embedding_provider="local"),
        ReferenceMatchMetric(references=REFS[1:3], aggregation="mean", embedding_provider="local"),
    ]
    results = asyncio.run(evaluate(cases, metrics, verbose=False))

    assert len(results) == len(cases)
    for (none, [case_result]), case in zip(results, cases, strict=True):
        assert none is None
        assert isinstance(case_result, TestCaseResult)
        assert (case_result.input, case_result.actual_output, case_result.expected_output) == (
            case.input,
            case.actual_output,
            case.expected_output,
        )
        assert [m.name for m in case_result.metrics_data] == [m.name for m in metrics]
        assert case_result.success is all(m.success for m in case_result.metrics_data)
        for metric, got in zip(metrics, case_result.metrics_data, strict=True):
            assert isinstance(got, MetricResult)
            alone = asyncio.run(metric.evaluate(case))
            assert got.score == pytest.approx(alone["score"], abs=1e-6)
            assert (got.success, got.reason, got.evaluation_log) == (
                alone["success"],
                alone["reason"],
                alone["evaluation_log"],
            )
            assert (
                got.threshold == metric.threshold
                and got.evaluation_model is None
                and got.evaluation_cost == 0
            )

    # and every metric against eval_lib's formula on sentence-transformers embeddings, case by case:
    # max over all references, the semantic similarity with expected_output ("" when None), the mean
    texts = list(dict.fromkeys([*OUTPUTS, *REFS, ""]))
    st_vectors = dict(zip(texts, st_model.encode(texts), strict=True))
    for (_, [case_result]), case in zip(results, cases, strict=True):
        got = [m.score for m in case_result.metrics_data]
        groups = [
            ([case.actual_output, *REFS], "max"),
            ([case.actual_output, case.expected_output or ""], "max"),
            ([case.actual_output, *REFS[1:3]], "mean"),
        ]
        want = [eval_lib_formula(np.array([st_vectors[t] for t in g]), how)[0] for g, how in groups]
        assert got == pytest.approx(want, abs=1e-5)


class RecordingMetric:
    """A metric of another library: name, threshold, async evaluate(test_case) -> dict."""

    name = "recordingMetric"
    threshold = 0.5

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.verbose = False
        self.model = "judge-model"

    async def evaluate(self, test_case):
        self.log.append(test_case.input)
        return {"name": self.name, "score": 0.9, "success": True, "reason": "ok", "evaluation_cost": 0.25}


def test_mixed_metrics_keep_their_order(default_model_ready, embedding_server):
    log: list[str] = []
    cases = make_cases(5)
    metrics = [
        RecordingMetric(log),
        ReferenceMatchMetric(references=REFS, embedding_provider="local"),
        ReferenceMatchMetric(references=REFS[:1], embedding_provider="openai"),
    ]
    results = asyncio.run(evaluate(cases, metrics, verbose=False))
    assert log == [c.input for c in cases]  # other metrics: called case by case, in order
    assert [r["body"]["input"] for r in embedding_server.requests] == [
        [c.actual_output, REFS[0]] for c in cases
    ]
    for _, [case_result] in results:
        names = [m.name for m in case_result.metrics_data]
        assert names == ["recordingMetric", "referenceMatchMetric", "referenceMatchMetric"]
        recorded = case_result.metrics_data[0]
        assert (recorded.evaluation_cost, recorded.evaluation_model, recorded.evaluation_log) == (
            0.25,
            "judge-model",
            None,
        )


class StrictReferenceMatch(ReferenceMatchMetric):
    """A user's subclass with its own rule: an answer longer than 40 characters fails."""

    async def evaluate(self, test_case):
        result = await super().evaluate(test_case)
        if len(test_case.actual_output) > 40:
            result.update(score=0.0, success=False, reason="answer too long")
        return result


def test_subclass_overriding_evaluate_is_evaluated_case_by_case(spy_encoder):
    cases = make_cases(12)
    strict = StrictReferenceMatch(references=REFS, embedding_provider="local")
    plain = ReferenceMatchMetric(references=REFS, embedding_provider="local")
    spy = spy_encoder(plain.provider)
    results = asyncio.run(evaluate(cases, [strict, plain], verbose=False))

    alone = [asyncio.run(strict.evaluate(case)) for case in cases]  # the reference: one case at a time
    got = [case_result.metrics_data[0] for _, [case_result] in results]
    assert [(m.score, m.success, m.reason) for m in got] == [
        (pytest.approx(a["score"], abs=1e-6), a["success"], a["reason"]) for a in alone
    ]
    assert sum(m.reason == "answer too long" for m in got) == sum(len(o) > 40 for o in OUTPUTS[:6]) * 2
    assert len(spy.calls) == 1  # the plain metric beside it is still batched


def test_patched_evaluate_is_awaited_for_every_case(default_model_ready):
    cases = make_cases(4)
    metric = ReferenceMatchMetric(references=REFS, embedding_provider="local")
    fake = {"name": metric.name, "score": 0.5, "success": True, "reason": "mocked", "evaluation_cost": 0}
    with mock.patch.object(metric, "evaluate", mock.AsyncMock(return_value=fake)) as patched:
        results = asyncio.run(evaluate(cases, [metric], verbose=False))
    assert patched.await_args_list == [mock.call(case) for case in cases]
    assert [r[1][0].metrics_data[0].reason for r in results] == ["mocked"] * len(cases)


def test_patched_provider_embed_is_awaited_case_by_case(default_model_ready):
    """The batch stands in for the provider's embed too: a patched one gets eval_lib's per-case calls."""
    cases = make_cases(3)
    metric = ReferenceMatchMetric(references=REFS[:2], embedding_provider="local")
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    with mock.patch.object(metric.provider, "embed", mock.AsyncMock(return_value=(vectors, 0.0))) as patched:
        results = asyncio.run(evaluate(cases, [metric], verbose=False))
    assert patched.await_args_list == [mock.call([c.actual_output, *REFS[:2]]) for c in cases]
    want, _ = eval_lib_formula(vectors, "max")
    assert [r[1][0].metrics_data[0].score for r in results] == [pytest.approx(want)] * len(cases)


def test_metric_without_references_in_a_batch(spy_encoder):
    empty = ReferenceMatchMetric(embedding_provider="local")
    spy = spy_encoder(empty.provider)
    results = asyncio.run(evaluate(make_cases(3), [empty], verbose=False))
    assert spy.calls == []
    assert [r[1][0].metrics_data[0].reason for r in results] == ["No reference texts provided."] * 3
    assert all(r[1][0].success is False for r in results)


def test_empty_inputs():
    assert asyncio.run(evaluate([], [ReferenceMatchMetric(embedding_provider="local")], verbose=False)) == []
    [(none, [result])] = asyncio.run(evaluate(make_cases(1), [], verbose=False))
    assert none is None and result.success is True and result.metrics_data == []


def test_large_batch_matches_numpy(spy_encoder, st_model):
    """500 cases, 5 shared references: the benchmark's shape, checked against numpy float64 cosines of
    sentence-transformers' embeddings."""
    rng = np.random.default_rng(0)
    words = "password login email reset account support link page settings security".split()
    outputs = [" ".join(rng.choice(words, size=6)) + f" {i}" for i in range(500)]
    cases = [EvalTestCase(input="q", actual_output=o) for o in outputs]
    metric = ReferenceMatchMetric(references=REFS, embedding_provider="local")
    spy = spy_encoder(metric.provider)
    results = asyncio.run(evaluate(cases, [metric], verbose=False))
    assert len(spy.calls) == 1 and len(spy.calls[0]) == 505

    emb = st_model.encode(outputs + REFS).astype(np.float64)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    want = np.clip(emb[:500] @ emb[500:].T, 0.0, 1.0).max(axis=1)
    got = np.array([r[1][0].metrics_data[0].score for r in results])
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_results_are_dataclasses_like_eval_lib():
    fields = [f.name for f in dataclasses.fields(MetricResult)]
    assert fields == [
        "name",
        "score",
        "threshold",
        "success",
        "evaluation_cost",
        "reason",
        "evaluation_model",
        "evaluation_log",
    ]
    fields = [f.name for f in dataclasses.fields(TestCaseResult)]
    assert fields == [
        "input",
        "actual_output",
        "expected_output",
        "retrieval_context",
        "success",
        "metrics_data",
        "tools_called",
        "expected_tools",
    ]
