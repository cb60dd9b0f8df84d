"""``SASEvaluator(cache_dir=...)``: scores through the persistent embedding cache equal those without it;
the setting is serialised only when given (so a default evaluator keeps Haystack's parameters)."""

from __future__ import annotations

import sqlite3

from simkernel.components.evaluators import SASEvaluator

GROUND_TRUTH = ["Berlin", "Paris", "Москва", "北京"]
PREDICTED = ["Berlin, Germany", "Lyon", "Москва, Россия", "北京市"]


def test_cached_scores_equal_uncached_and_serialisation(minilm, tmp_path):
    plain = SASEvaluator(model=minilm).run(ground_truth_answers=GROUND_TRUTH, predicted_answers=PREDICTED)
    for _ in range(2):
        cached = SASEvaluator(model=minilm, cache_dir=tmp_path)
        result = cached.run(ground_truth_answers=GROUND_TRUTH, predicted_answers=PREDICTED)
        assert result["individual_scores"] == plain["individual_scores"]
    with sqlite3.connect(tmp_path / "embeddings.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 8
    data = cached.to_dict()
    assert data["init_parameters"]["cache_dir"] == str(tmp_path)
    assert SASEvaluator.from_dict(data)._cache_dir == str(tmp_path)
    assert "cache_dir" not in SASEvaluator(model=minilm).to_dict()["init_parameters"]
