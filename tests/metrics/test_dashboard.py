"""``evaluate(..., show_dashboard=True)`` saves sessions in eval_lib's ``.eval_cache/results.json`` format:
compared with the file the real eval_lib wrote (tests/data/fixtures/eval_lib_evaluate_minilm.json)."""

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


def assert_same_tree(got, want, path="$"):
    """``got`` equals ``want`` (JSON-like trees): same types, keys in the same order, equal values; floats
    within 1e-5 (eval_lib's scores are float64 cosines of torch embeddings)."""
    if isinstance(want, float):
        assert isinstance(got, float) and got == pytest.approx(want, abs=1e-5), (path, got, want)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), (path, list(got), list(want))
        for key in want:
            assert_same_tree(got[key], want[key], f"{path}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same_tree(g, w, f"{path}[{i}]")
    else:
        assert type(got) is type(want) and got == want, (path, got, want)


def test_results_json_is_the_one_eval_lib_writes(
    tmp_path, monkeypatch, default_model_ready, eval_lib_evaluate_fixture
):
    """The same two evaluate() calls eval_lib made (tests/data/fixtures/eval_lib_evaluate_minilm.json,
    scripts/eval_lib_reference.sh): identical results and an identical .eval_cache/results.json, but for
    the second session's id and the timestamps, which hold the time of the run."""
    import dataclasses
    import re

    from simkernel import metrics as simkernel_metrics

    fixture = eval_lib_evaluate_fixture
    monkeypatch.chdir(tmp_path)
    cases = [EvalTestCase(**case) for case in fixture["cases"]]
    metrics = [
        getattr(simkernel_metrics, m["class"])(**m["kwargs"], embedding_provider="local")
        for m in fixture["metrics"]
    ]
    first = asyncio.run(
        evaluate(cases, metrics, verbose=False, show_dashboard=True, session_name=fixture["session_name"])
    )
    second = asyncio.run(evaluate(cases[:1], metrics, verbose=False, show_dashboard=True))

    def plain(results):
        return [[index, [dataclasses.asdict(r) for r in rs]] for index, rs in results]

    assert_same_tree(plain(first), fixture["evaluate_result"])
    assert_same_tree(plain(second), fixture["second_evaluate_result"])
    written = json.loads((tmp_path / ".eval_cache" / "results.json").read_text(encoding="utf-8"))
    want = fixture["results_json"]
    assert [s["session_id"] for s in written][0] == want[0]["session_id"] == fixture["session_name"]
    assert re.fullmatch(r"session_\d+", written[1]["session_id"]) and re.fullmatch(
        r"session_\d+", want[1]["session_id"]
    )
    for session in (*written, *want):
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", session.pop("timestamp"))
    written[1]["session_id"] = want[1]["session_id"]
    assert_same_tree(written, want)
