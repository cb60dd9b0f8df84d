"""A metric that adds several columns (:mod:`tests.scoring.length_pair_metric`: the length difference and
the length ratio, the ratio primary) is carried whole by ``score_file`` (CSV, JSONL, Parquet, stdout, with
``--resume`` after an interruption), ``simkernel score`` and the server's ``POST /v1/score/{metric}``
(Spark and the Ray engine: tests/spark and tests/ray). Each column is checked against the lengths counted
here, row by row; a one-column metric's names and bytes do not change (tests/cli)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest
from tests.scoring.plugin import PAIR_ENTRY, install_here, plugin_path, uninstall_here, write_plugin
from tests.scoring.test_metric_plugin import ROWS, write_rows

NAMES = ["score_difference", "score_ratio"]


def differences(rows=ROWS) -> list[int]:
    return [len(a) - len(b) for a, b in rows]


def ratios(rows=ROWS) -> list[float]:
    return [min(len(a), len(b)) / max(len(a), len(b)) for a, b in rows]


def read_columns(path, names=NAMES) -> dict[str, list[str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {name: [row[name] for row in rows] for name in names}


def check_csv(path, rows=ROWS, names=NAMES) -> None:
    columns = read_columns(path, names)
    assert [int(v) for v in columns[names[0]]] == differences(rows)
    assert [float(v) for v in columns[names[1]]] == pytest.approx(ratios(rows), abs=1e-15)


@pytest.fixture
def pair(tmp_path):
    folder = write_plugin(tmp_path / "site", PAIR_ENTRY)
    install_here(folder)
    yield folder
    uninstall_here(folder)


def test_the_metric_declares_its_columns_and_primary(pair):
    from simkernel.scoring import Metric, get_metric

    metric = get_metric("length_pair")
    assert metric.columns == (("difference", "int64"), ("ratio", "float64"))
    assert (metric.primary, metric.primary_index, metric.several_columns) == ("ratio", 1, True)
    assert metric.output_columns("score") == [("score_difference", "int64"), ("score_ratio", "float64")]
    assert metric.output_columns("len") == [("len_difference", "int64"), ("len_ratio", "float64")]
    assert get_metric("sas").output_columns("score") == [("score", "float32")]  # one column: as ever
    assert get_metric("sas").columns == (("", "float32"),)
    base = {
        "name": "m",
        "target": "ground_truth",
        "settings": frozenset(),
        "make_scorer": None,
        "summary": "",
    }
    with pytest.raises(ValueError, match="a metric's primary column must be one of \\['a', 'b'\\], got 'c'"):
        Metric(**base, score_type="float64", columns=(("a", "float64"), ("b", "float64")), primary="c")
    with pytest.raises(ValueError, match="a metric's score_type is its primary column's type: 'int64'"):
        Metric(**base, score_type="float64", columns=(("a", "int64"), ("b", "float64")))
    with pytest.raises(ValueError, match="distinct and non-empty"):
        Metric(**base, score_type="float64", columns=(("a", "float64"), ("a", "float64")))


def test_score_file_writes_every_column(pair, tmp_path):
    import simkernel

    source = write_rows(tmp_path / "in.csv")
    out = tmp_path / "out.csv"
    summary = simkernel.score_file(source, out, metric="length_pair", threshold=0.5)
    check_csv(out)
    with open(out, encoding="utf-8", newline="") as handle:
        records = list(csv.DictReader(handle))
    assert list(records[0]) == ["predicted", "ground_truth", *NAMES, "success"]
    # success, the pass rate and the mean are the primary column's (the ratio)
    assert [r["success"] == "true" for r in records] == [r >= 0.5 for r in ratios()]
    assert summary.passed == sum(r >= 0.5 for r in ratios())
    assert summary.mean_score == pytest.approx(sum(ratios()) / len(ROWS))
    assert summary.primary_column == "score_ratio"
    assert [c.name for c in summary.columns] == NAMES
    assert summary.columns[0].mean == pytest.approx(sum(differences()) / len(ROWS))
    assert summary.columns[1].mean == pytest.approx(sum(ratios()) / len(ROWS))
    data = summary.as_dict()
    assert data["primary_column"] == "score_ratio" and [c["name"] for c in data["columns"]] == NAMES
    assert "  column      score_difference: mean " in "\n".join(summary.lines())


def test_score_file_every_format_and_a_score_column_name(pair, tmp_path):
    import pyarrow.parquet as pq

    import simkernel

    source = write_rows(tmp_path / "in.csv")
    simkernel.score_file(source, tmp_path / "out.jsonl", metric="length_pair", score_column="len")
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text("utf-8").splitlines()]
    assert [r["len_difference"] for r in rows] == differences()
    assert [r["len_ratio"] for r in rows] == pytest.approx(ratios(), abs=1e-15)
    simkernel.score_file(source, tmp_path / "out.parquet", metric="length_pair", chunk_rows=3)
    table = pq.read_table(tmp_path / "out.parquet")
    assert str(table.schema.field("score_difference").type) == "int64"
    assert str(table.schema.field("score_ratio").type) == "double"
    assert table.column("score_difference").to_pylist() == differences()
    assert table.column("score_ratio").to_pylist() == pytest.approx(ratios(), abs=1e-15)
    simkernel.score_file(source, tmp_path / "out.tsv", metric="length_pair")
    with open(tmp_path / "out.tsv", encoding="utf-8", newline="") as handle:
        records = list(csv.DictReader(handle, delimiter="\t"))
    assert [int(r["score_difference"]) for r in records] == differences()


def test_an_input_column_named_as_an_added_one_is_refused(pair, tmp_path):
    import simkernel
    from simkernel.errors import DataError

    source = tmp_path / "in.csv"
    source.write_text("predicted,ground_truth,score_ratio\na,b,1\n", encoding="utf-8")
    with pytest.raises(DataError, match="already has a column 'score_ratio'.*--score-column NAME"):
        simkernel.score_file(source, tmp_path / "out.csv", metric="length_pair")


def test_resume_after_an_interruption_gives_the_same_bytes(pair, tmp_path, monkeypatch):
    from tests.scoring import length_pair_metric

    import simkernel
    from simkernel.errors import Interrupted

    rows = ROWS * 5
    source = write_rows(tmp_path / "in.csv", rows)
    whole = tmp_path / "whole.csv"
    simkernel.score_file(source, whole, metric="length_pair", chunk_rows=4, label=None)
    calls = []
    real = length_pair_metric.LengthPairScorer.score

    def interrupted(self, predicted, targets):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, predicted, targets)

    out = tmp_path / "out.csv"
    monkeypatch.setattr(length_pair_metric.LengthPairScorer, "score", interrupted)
    with pytest.raises(Interrupted, match="the 8 rows scored so far are kept"):
        simkernel.score_file(source, out, metric="length_pair", chunk_rows=4)
    monkeypatch.setattr(length_pair_metric.LengthPairScorer, "score", real)
    summary = simkernel.score_file(source, out, metric="length_pair", chunk_rows=4, resume=True)
    assert out.read_bytes() == whole.read_bytes()
    check_csv(out, rows)
    # the summary's columns cover the resumed rows too (read back from the partial folder's scores)
    assert summary.columns[0].mean == pytest.approx(sum(differences(rows)) / len(rows))
    assert summary.mean_score == pytest.approx(sum(ratios(rows)) / len(rows))


def test_the_command_line_writes_every_column(pair, tmp_path):
    out = tmp_path / "out.csv"
    env = {"PYTHONPATH": plugin_path(pair), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    argv = [write_rows(tmp_path / "in.csv"), "--mode", "length_pair", "-o", str(out)]
    run = subprocess.run(
        [sys.executable, "-m", "simkernel", "score", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    check_csv(out)
    assert "mean score  " in run.stderr and "(score_ratio)" in run.stderr
    assert "  column      score_difference: mean " in run.stderr


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from tests.serve.serve_support import DEFAULT_MODEL, loopback_env, served_client

    folder = write_plugin(tmp_path_factory.mktemp("site"), PAIR_ENTRY)
    with served_client("--model", DEFAULT_MODEL, env=loopback_env(PYTHONPATH=plugin_path(folder))) as http:
        yield http


def test_the_server_answers_every_column(served):
    body = {"predicted": [a for a, _ in ROWS], "ground_truth": [b for _, b in ROWS]}
    answer = served.post("/v1/score/length_pair", json=body)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["metric"] == "length_pair" and data["primary"] == "ratio"
    assert list(data["columns"]) == ["difference", "ratio"]
    assert data["columns"]["difference"]["scores"] == differences()
    assert data["columns"]["difference"]["mean"] == pytest.approx(sum(differences()) / len(ROWS))
    assert data["columns"]["ratio"]["scores"] == pytest.approx(ratios(), abs=1e-15)
    assert data["scores"] == data["columns"]["ratio"]["scores"]  # the primary column
    assert data["mean"] == pytest.approx(sum(ratios()) / len(ROWS))
    empty = served.post("/v1/score/length_pair", json={"predicted": [], "ground_truth": []}).json()
    assert empty["columns"] == {
        "difference": {"scores": [], "mean": None},
        "ratio": {"scores": [], "mean": None},
    }
