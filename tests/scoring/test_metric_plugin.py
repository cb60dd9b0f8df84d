"""A metric added in one place (:mod:`tests.scoring.length_ratio_metric`, declared as an entry point) is
then available, with no other change, from ``score_file``, ``simkernel score`` and the server's
``POST /v1/score/{metric}`` (Spark and the Ray engine: tests/spark and tests/ray). Each score is checked
against the ratio computed here, row by row."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest
from tests.scoring.plugin import install_here, plugin_path, uninstall_here, write_plugin

ROWS = [
    ("Paris", "It is Paris."),
    ("Москва — столица России.", "Столица — Москва."),
    ("北京是中国的首都。", "首都是北京。"),
    ("🙂 yes", "🙂 yes"),
]


def expected(rows=ROWS) -> list[float]:
    return [min(len(a), len(b)) / max(len(a), len(b)) for a, b in rows]


def write_rows(path, rows=ROWS) -> str:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["predicted", "ground_truth"])
        writer.writerows(rows)
    return str(path)


def read_scores(path) -> list[float]:
    with open(path, encoding="utf-8", newline="") as handle:
        return [float(row["score"]) for row in csv.DictReader(handle)]


@pytest.fixture
def plugin(tmp_path):
    folder = write_plugin(tmp_path / "site")
    install_here(folder)
    yield folder
    uninstall_here(folder)


def test_the_registry_lists_it_only_when_installed(plugin):
    from simkernel.scoring import get_metric, metric_names

    assert metric_names()[:3] == ["sas", "reference", "exact"]
    assert "length_ratio" in metric_names()
    assert get_metric("length_ratio").score_type == "float64"
    uninstall_here(plugin)
    with pytest.raises(
        ValueError, match="unknown metric 'length_ratio'; choose one of: sas, reference, exact"
    ):
        get_metric("length_ratio")


def test_score_file_scores_with_it(plugin, tmp_path):
    import simkernel

    out = tmp_path / "out.csv"
    summary = simkernel.score_file(write_rows(tmp_path / "in.csv"), out, metric="length_ratio")
    assert read_scores(out) == pytest.approx(expected(), abs=1e-15)
    assert summary.rows == len(ROWS)
    assert summary.mean_score == pytest.approx(sum(expected()) / len(ROWS))
    assert summary.description == "mode length_ratio"


def test_the_command_line_scores_with_it(plugin, tmp_path):
    out = tmp_path / "out.csv"
    env = {"PYTHONPATH": plugin_path(plugin), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "simkernel",
            "score",
            write_rows(tmp_path / "in.csv"),
            "--mode",
            "length_ratio",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert read_scores(out) == pytest.approx(expected(), abs=1e-15)
    assert "mode length_ratio" in run.stderr
    # an option the metric does not take is refused, as for the built-in metrics
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "simkernel",
            "score",
            str(tmp_path / "in.csv"),
            "--mode",
            "length_ratio",
            "--model",
            "m",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 2
    assert "--model does not apply to --mode length_ratio" in run.stderr


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from tests.serve.serve_support import DEFAULT_MODEL, loopback_env, served_client

    folder = write_plugin(tmp_path_factory.mktemp("site"))
    with served_client("--model", DEFAULT_MODEL, env=loopback_env(PYTHONPATH=plugin_path(folder))) as http:
        yield http


def test_the_server_scores_with_it(served):
    body = {"predicted": [a for a, _ in ROWS], "ground_truth": [b for _, b in ROWS]}
    answer = served.post("/v1/score/length_ratio", json=body)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["metric"] == "length_ratio" and data["model"] is None
    assert data["scores"] == pytest.approx(expected(), abs=1e-15)
    assert data["mean"] == pytest.approx(sum(expected()) / len(ROWS))


def test_the_server_route_scores_the_built_in_metrics_as_the_core_does(served):
    from simkernel.scoring import ScoringSettings, get_metric

    predicted = [a for a, _ in ROWS]
    truths = [b for _, b in ROWS]
    refs = [[b, a[:3]] for a, b in ROWS]
    sas = served.post("/v1/score/sas", json={"predicted": predicted, "ground_truth": truths}).json()
    local = get_metric("sas").scorer(ScoringSettings()).score(predicted, truths)
    assert sas["scores"] == local  # bit for bit: the same model and core
    ref = served.post(
        "/v1/score/reference", json={"predicted": predicted, "references": refs, "aggregation": "mean"}
    ).json()
    local_ref = get_metric("reference").scorer(ScoringSettings(aggregation="mean")).score(predicted, refs)
    assert ref["scores"] == local_ref
    exact = served.post("/v1/score/exact", json={"predicted": predicted, "ground_truth": truths}).json()
    assert exact["scores"] == [0, 0, 0, 1]


def test_the_server_names_an_unknown_metric_and_a_bad_body(served):
    answer = served.post("/v1/score/nope", json={"predicted": ["a"], "ground_truth": ["b"]})
    assert answer.status_code == 404
    assert (
        "no metric named 'nope'; the metrics are: sas, reference, exact, bertscore, length_ratio"
        in answer.text
    )
    answer = served.post("/v1/score/sas", json={"predicted": ["a", "b"], "ground_truth": ["b"]})
    assert answer.status_code == 422
    assert "'predicted' holds 2 texts and 'ground_truth' 1 rows" in answer.text
    answer = served.post(
        "/v1/score/sas", json={"predicted": ["a"], "ground_truth": ["b"], "aggregation": "max"}
    )
    assert answer.status_code == 422  # sas takes no aggregation: named as an unknown field
    answer = served.post("/v1/score/exact", json={"predicted": ["a"], "ground_truth": ["a"], "model": "m"})
    assert answer.status_code == 422 and "runs no model" in answer.text
