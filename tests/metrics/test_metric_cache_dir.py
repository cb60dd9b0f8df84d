"""``cache_dir=`` on the eval_lib-compatible metrics (local provider): results equal the uncached ones and
the texts land in the persistent cache; other providers refuse it."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from simkernel import EvalTestCase
from simkernel.metrics.vector_metrics import ReferenceMatchMetric, SemanticSimilarityMetric


def test_local_metric_through_the_cache(default_model_ready, tmp_path):
    case = EvalTestCase(input="q", actual_output="Роман написал Пушкин.", expected_output="Пушкин")
    refs = ["Александр Пушкин", "Пушкин"]
    plain = asyncio.run(ReferenceMatchMetric(references=refs, embedding_provider="local").evaluate(case))
    cached_metric = ReferenceMatchMetric(references=refs, embedding_provider="local", cache_dir=tmp_path)
    assert asyncio.run(cached_metric.evaluate(case)) == plain
    semantic = SemanticSimilarityMetric(embedding_provider="local", cache_dir=tmp_path)
    asyncio.run(semantic.evaluate(case))
    with sqlite3.connect(tmp_path / "embeddings.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 3


def test_other_providers_refuse_cache_dir(tmp_path):
    with pytest.raises(
        ValueError, match="cache_dir applies to embedding_provider='local' only, not 'openai'"
    ):
        SemanticSimilarityMetric(embedding_provider="openai", cache_dir=tmp_path)
