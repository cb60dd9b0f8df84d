"""``evaluate(..., show_dashboard=True)`` saves sessions in eval_lib's ``.eval_cache/results.json`` format."""

from __future__ import annotations

import asyncio
import json

import pytest

from simkernel import EvalTestCase, ReferenceMatchMetric, evaluate


def run(metric, session_name=None):
    cases = [EvalTestCase(input="Capital of France?", actual_output="Paris is the capital of France.")]
    return asyncio.run(
        evaluate(cases, [metric], verbose=False, show_dashboard=True, session_name=session_name)
    )


def test_sessions_are_appended(tmp_path, monkeypatch, default_model_ready):
    monkeypatch.chdir(tmp_path)
    metric = ReferenceMatchMetric(
        references=["Paris is the capital of France.", "Bananas."], embedding_provider="local"
    )
    results = run(metric, "first")
    run(metric)
    history = json.loads((tmp_path / ".eval_cache" / "results.json").read_text(encoding="utf-8"))
    assert [s["session_id"] for s in history][0] == "first"
    assert history[1]["session_id"].startswith("session_")
    data = history[0]["data"]
    assert data["total_tests"] == 1 and data["total_cost"] == 0.0
    [case] = data["test_cases"]
    assert case["input_full"] == "Capital of France?" and case["retrieval_context"] == []
    [metric_entry] = case["metrics"]
    score = results[0][1][0].metrics_data[0].score
    assert metric_entry["score"] == round(score, 3)
    assert metric_entry["reason_full"] == results[0][1][0].metrics_data[0].reason
    summary = data["metrics_summary"]["referenceMatchMetric"]
    assert summary["passed"] == 1 and summary["success_rate"] == 100 and summary["avg_score"] == score


def test_unreadable_cache_is_kept_aside(tmp_path, monkeypatch, default_model_ready):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".eval_cache").mkdir()
    (tmp_path / ".eval_cache" / "results.json").write_text("{not json", encoding="utf-8")
    with pytest.warns(UserWarning, match="could not be read"):
        run(ReferenceMatchMetric(references=["x"], embedding_provider="local"))
    kept = list((tmp_path / ".eval_cache").glob("results.json.unreadable-*"))
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == "{not json"
    assert len(json.loads((tmp_path / ".eval_cache" / "results.json").read_text(encoding="utf-8"))) == 1
