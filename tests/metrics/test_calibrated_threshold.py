"""``threshold="calibrated"`` on the eval_lib-compatible metrics: the registry's calibrated threshold of the
local model and precision decides ``success``; providers and models without one are refused clearly."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from simkernel import EvalTestCase
from simkernel.metrics.embedding_providers import LocalEmbeddingProvider
from simkernel.metrics.vector_metrics import ReferenceMatchMetric, SemanticSimilarityMetric
from simkernel.runtime.acquisition.registry import known_model

ENTRY = known_model("sentence-transformers/all-MiniLM-L6-v2")
# scores between the calibrated threshold (~0.47) and eval_lib's 0.7 with all-MiniLM-L6-v2
ACTUAL, EXPECTED = "Paris", "The capital of France"


def test_calibrated_threshold_decides_success(default_model_ready, st_model):
    calibrated = ENTRY.calibrated_threshold("fp32").threshold
    x, y = st_model.encode([ACTUAL, EXPECTED], convert_to_numpy=True).astype(np.float64)
    reference = float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))
    assert calibrated < reference < 0.7  # the case sits between the two thresholds
    case = EvalTestCase(input="q", actual_output=ACTUAL, expected_output=EXPECTED)
    metric = SemanticSimilarityMetric(threshold="calibrated", embedding_provider="local")
    assert metric.threshold == calibrated
    assert metric.threshold_source.startswith("calibrated for sentence-transformers/all-MiniLM-L6-v2 (fp32)")
    result = asyncio.run(metric.evaluate(case))
    assert result["score"] == pytest.approx(reference, abs=1e-5)
    assert result["success"] is True
    assert result["reason"] == f"Semantic similarity: {result['score']:.4f} (threshold: {calibrated})"
    fixed = asyncio.run(SemanticSimilarityMetric(threshold=0.7, embedding_provider="local").evaluate(case))
    assert fixed["success"] is False
    reference_match = ReferenceMatchMetric(
        threshold="calibrated", references=[EXPECTED, "Berlin"], embedding_provider="local"
    )
    assert asyncio.run(reference_match.evaluate(case))["success"] is True


def test_int8_takes_the_int8_threshold():
    provider = LocalEmbeddingProvider(precision="int8")
    metric = ReferenceMatchMetric(threshold=" Calibrated ", references=["x"], embedding_provider=provider)
    assert metric.threshold == ENTRY.calibrated_threshold("int8").threshold
    assert "(int8)" in metric.threshold_source


def test_without_a_calibrated_threshold_the_error_says_what_to_pass(tmp_path):
    with pytest.raises(ValueError, match=r"threshold='calibrated' needs a local model .* pass a number"):
        SemanticSimilarityMetric(threshold="calibrated", embedding_provider="openai")
    with pytest.raises(
        ValueError, match=r"model '.*' has no calibrated threshold for fp32 \(models with one: "
    ):
        SemanticSimilarityMetric(threshold="calibrated", embedding_provider="local", model_name=str(tmp_path))
    with pytest.raises(TypeError, match="threshold must be a number .* or 'calibrated'"):
        SemanticSimilarityMetric(threshold="high", embedding_provider="local")
