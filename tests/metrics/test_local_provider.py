"""The metrics' local provider with its own settings (``precision="int8"``, ``threads``, ``batch_size``),
one model shared by a metric and a SASEvaluator, and copies of a metric (deepcopy, pickle) that has scored.

What onnxruntime really received is read from the sessions made during the test (``onnx_sessions``,
tests/conftest.py); embeddings and scores are checked against sentence-transformers on the same checkpoint.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from tests.copies import COPIES

from simkernel.components.evaluators import SASEvaluator
from simkernel.metrics import EvalTestCase, evaluate
from simkernel.metrics.embedding_providers import LocalEmbeddingProvider
from simkernel.metrics.vector_metrics import ReferenceMatchMetric

TEXTS = [
    "Paris is the capital of France.",
    "The capital of France is Paris.",
    "France's capital is Paris.",
    "Bananas are rich in potassium.",
    "Москва — столица России.",
    "Столица России — Москва.",
    "北京是中国的首都。",
    "",
    "a much longer answer about the capital of Germany, which is Berlin, a city on the Spree",
    "Berlin",
]
REFERENCES = ["Paris is the capital of France.", "The capital of France is Paris."]
# README, "Models", int8: min cosine 0.964 between the int8 and fp32 embeddings of all-MiniLM-L6-v2 on every
# x86-64 int8 kernel (0.9670 with VNNI / AMX, 0.9695 without)
INT8_MIN_COSINE = 0.964


def unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def test_int8_threads_and_batch_size_reach_onnxruntime(default_model_ready, onnx_sessions, st_model):
    provider = LocalEmbeddingProvider("all-MiniLM-L6-v2", precision="int8", threads=1, batch_size=3)
    embeddings = provider.embed_sync(TEXTS)
    assert [(s.graph, s.intra_op_threads) for s in onnx_sessions] == [("model_int8.onnx", 1)]
    assert max(onnx_sessions[0].batches) == 3 and sum(onnx_sessions[0].batches) == len(set(TEXTS))
    reference = unit(st_model.encode(TEXTS))
    cosines = (unit(embeddings) * reference).sum(axis=1)
    assert cosines.min() >= INT8_MIN_COSINE  # measured 0.974 (on ""), the others 0.993-0.997
    assert np.abs(unit(embeddings) - reference).max() > 1e-3  # the int8 graph, not the fp32 one


def test_int8_provider_in_a_metric_scores_close_to_fp32(default_model_ready, onnx_sessions, st_model):
    """ReferenceMatchMetric on the int8 provider vs the same formula on sentence-transformers' fp32
    embeddings: max over the references of the cosine clamped to [0, 1]."""
    provider = LocalEmbeddingProvider(precision="int8", threads=2, batch_size=4)
    metric = ReferenceMatchMetric(references=REFERENCES, embedding_provider=provider)
    outputs = [t for t in TEXTS if t]
    cases = [EvalTestCase(input="q", actual_output=text) for text in outputs]
    results = [asyncio.run(metric.evaluate(case)) for case in cases]
    reference = unit(st_model.encode(outputs)) @ unit(st_model.encode(REFERENCES)).T
    expected = np.clip(reference, 0.0, 1.0).max(axis=1)
    scores = np.array([r["score"] for r in results])
    # measured: at most 0.0070 from fp32 on these texts (onnxruntime 1.32.0; int8 kernels differ by version)
    np.testing.assert_allclose(scores, expected, atol=0.01)
    assert {s.graph for s in onnx_sessions} == {"model_int8.onnx"}
    assert onnx_sessions[0].intra_op_threads == 2
    assert max(b for s in onnx_sessions for b in s.batches) <= 4


def test_evaluator_and_metric_share_one_model(default_model_ready, onnx_sessions, minilm_pairs):
    """A SASEvaluator and a local metric of the same model hold the same encoder, and so the same
    onnxruntime session: the model is loaded once, and one embeds what the other already embedded."""
    evaluator = SASEvaluator(model="sentence-transformers/all-MiniLM-L6-v2")
    evaluator.warm_up()
    metric = ReferenceMatchMetric(references=REFERENCES, embedding_provider="local")
    encoder = metric.provider.encoder
    assert encoder is evaluator._similarity_model
    assert encoder._session is evaluator._similarity_model._session
    assert [s.graph for s in onnx_sessions] == ["model.onnx"]  # one load for both

    ground_truths, predictions = minilm_pairs
    evaluator.run(ground_truth_answers=ground_truths, predicted_answers=predictions)
    runs_before = sum(len(s.batches) for s in onnx_sessions)
    # the run may add the single-threaded twin session its data-parallel batches run on
    sessions_before = len(onnx_sessions)
    # the metric's texts were all embedded by the evaluator's run: served from the shared cache
    cases = [EvalTestCase(input="q", actual_output=text) for text in predictions]
    metric = ReferenceMatchMetric(references=ground_truths, embedding_provider="local")
    ((_, results),) = asyncio.run(evaluate(cases[:1], [metric], verbose=False))
    assert sum(len(s.batches) for s in onnx_sessions) == runs_before
    assert len(onnx_sessions) == sessions_before  # the metric loaded nothing
    assert results[0].metrics_data[0].score == pytest.approx(
        evaluator.run(ground_truth_answers=ground_truths[:1], predicted_answers=predictions[:1])["score"],
        abs=1e-6,
    )  # Paris vs its own ground truth is the best of the three references


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_metric_copied_after_scoring_gives_the_same_results(default_model_ready, how):
    metric = ReferenceMatchMetric(references=REFERENCES, embedding_provider="local")
    cases = [EvalTestCase(input="q", actual_output=text) for text in TEXTS]
    expected = [asyncio.run(metric.evaluate(case)) for case in cases]  # loads the model
    copied = COPIES[how](metric)
    assert copied.provider is not metric.provider and copied.provider._lock is not metric.provider._lock
    assert [asyncio.run(copied.evaluate(case)) for case in cases] == expected
    batched = asyncio.run(evaluate(cases, [copied], verbose=False))  # the batched path, on the copy
    assert [r.metrics_data[0].score for _, [r] in batched] == [e["score"] for e in expected]
    assert copied.provider.encoder is metric.provider.encoder  # loaded again: this process's shared model


@pytest.fixture
def minilm_pairs() -> tuple[list[str], list[str]]:
    return (
        ["Paris is the capital of France.", "Москва — столица России.", "北京是中国的首都。"],
        ["France's capital is Paris.", "Столица России — Москва.", "中国的首都是北京。"],
    )
