"""The metrics' local provider with ``precision="bf16"``: refused when the metric's provider is made on a
CPU without native bf16 (not at the first score; checked on every CPU, one with bf16 seen as one without); with the bf16 path computing in f32
(``simulated_bf16``) its embeddings equal sentence-transformers' within the fp32 tolerance."""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest
from tests.runtime.inference.bf16_cpu import simulate_cpu_without_bf16

from simkernel.errors import PrecisionUnavailableError
from simkernel.metrics import EvalTestCase
from simkernel.metrics.embedding_providers import LocalEmbeddingProvider
from simkernel.metrics.vector_metrics import ReferenceMatchMetric

TEXTS = ["Paris is the capital of France.", "Москва — столица России.", "北京是中国的首都。", "", "Berlin"]


def test_bf16_provider_is_refused_when_made(monkeypatch):
    reason = simulate_cpu_without_bf16(monkeypatch)
    with pytest.raises(
        PrecisionUnavailableError, match=r"precision='bf16' is not available: " + re.escape(reason)
    ):
        LocalEmbeddingProvider("all-MiniLM-L6-v2", precision="bf16")


def test_unknown_precision_is_refused_when_made():
    with pytest.raises(ValueError, match=r"precision must be one of \['bf16', 'fp32', 'int8'\], got 'fp16'"):
        LocalEmbeddingProvider("all-MiniLM-L6-v2", precision="fp16")


def test_bf16_path_provider_matches_sentence_transformers(default_model_ready, st_model, simulated_bf16):
    from simkernel.runtime.inference.openvino_session import OpenVinoEncoderSession

    provider = LocalEmbeddingProvider("all-MiniLM-L6-v2", precision="bf16", threads=2, batch_size=2)
    embeddings = provider.embed_sync(TEXTS)
    assert isinstance(provider.encoder._session, OpenVinoEncoderSession)
    np.testing.assert_allclose(embeddings, st_model.encode(TEXTS), atol=1e-5)
    metric = ReferenceMatchMetric(references=["The capital of France is Paris."], embedding_provider=provider)
    result = asyncio.run(metric.evaluate(EvalTestCase(input="q", actual_output=TEXTS[0])))
    reference = st_model.encode([TEXTS[0], "The capital of France is Paris."])
    expected = float(np.dot(reference[0], reference[1]) / np.prod(np.linalg.norm(reference, axis=1)))
    assert result["score"] == pytest.approx(min(max(expected, 0.0), 1.0), abs=1e-5)
