"""``simkernel calibrate``: the threshold it reports checked against scikit-learn on scores computed
independently (sentence-transformers), the JSON it writes, unlabelled rows, and its errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score, recall_score
from tests.cli.conftest import EXAMPLES, REPO, read_csv_rows

SQUAD = REPO / "tests" / "data" / "sas" / "SQuAD_SAS.csv"
KEYS = [
    "threshold",
    "interval",
    "precision",
    "recall",
    "f1",
    "kappa",
    "youden_threshold",
    "recommended",
    "positive_from",
    "n",
    "model",
    "precision_mode",
    # the figures with their 95% intervals (docs/statistics.md; checked in tests/stats)
    "figures",
]


def reference_scores(reference_embed, ground_truth: list[str], predicted: list[str]) -> np.ndarray:
    a = reference_embed(ground_truth)
    b = reference_embed(predicted)
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_sas_file_against_scikit_learn_on_independent_scores(cli, write, tmp_path, minilm, reference_embed):
    rows = read_csv_rows(SQUAD)[:300]
    path = write("squad.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = tmp_path / "calibration.json"
    result = cli(
        "calibrate", path, "--ground-truth", "answer1", "--predicted", "answer2", "--label", "label",
        "--output-json", out, "--bootstrap", "1000",
    )  # fmt: skip
    assert result.code == 0, result.err
    data = json.loads(out.read_text("utf-8"))
    assert list(data) == KEYS
    assert data["n"] == 300 and data["positive_from"] == 1.0
    assert (data["model"], data["precision_mode"]) == ("sentence-transformers/all-MiniLM-L6-v2", "fp32")
    scores = reference_scores(reference_embed, [r["answer1"] for r in rows], [r["answer2"] for r in rows])
    positive = np.array([float(r["label"]) >= 1 for r in rows])
    best = max(f1_score(positive, scores >= t) for t in np.unique(scores))
    assert data["f1"] == pytest.approx(best, abs=1e-9)
    assert data["f1"] == pytest.approx(f1_score(positive, scores >= data["threshold"]), abs=1e-9)
    figures = data["figures"]
    assert figures["recall"] == pytest.approx(recall_score(positive, scores >= data["threshold"]), abs=1e-9)
    assert (
        figures["intervals"]["recall"]["low"] <= figures["recall"] <= figures["intervals"]["recall"]["high"]
    )
    assert figures["intervals"]["threshold"]["low"] == data["interval"][0]
    assert data["kappa"] == pytest.approx(cohen_kappa_score(positive, scores >= data["threshold"]), abs=1e-9)
    low, high = data["interval"]
    assert low <= high and low < data["threshold"] + 0.2 and high > data["threshold"] - 0.2
    assert f"best F1     threshold {data['threshold']:.4f}" in result.out
    assert "Youden's J  threshold" in result.out and "fixed 0.7" in result.out
    assert f"--threshold {data['threshold']:.4f}" in result.out


def test_mixed_languages_and_positive_from(cli, minilm, tmp_path):
    out = tmp_path / "c.json"
    result = cli(
        "calibrate", EXAMPLES / "answers.csv", "--label", "label", "--positive-from", "2",
        "--output-json", out, "--bootstrap", "1000", "--precision", "int8",
    )  # fmt: skip
    assert result.code == 0, result.err
    data = json.loads(out.read_text("utf-8"))
    rows = read_csv_rows(EXAMPLES / "answers.csv")
    assert data["n"] == len(rows) == 45 and data["positive_from"] == 2.0
    assert data["precision_mode"] == "int8"
    assert f"label >= 2 (--positive-from): {sum(r['label'] == '2' for r in rows)} of 45" in result.out


def test_reference_mode_and_unlabelled_rows(cli, write, minilm):
    lines = (EXAMPLES / "references.jsonl").read_text("utf-8").splitlines()
    extra = json.dumps({"predicted": "Lyon", "references": ["Paris"], "label": None})
    path = write("refs.jsonl", "\n".join([*lines, extra]) + "\n")
    result = cli("calibrate", path, "--mode", "reference", "--label", "label", "--bootstrap", "0")
    assert result.code == 0, result.err
    assert f"{len(lines)} labelled rows" in result.out
    assert "left out    1 row(s) with an empty label" in result.out
    assert "no interval (--bootstrap 0)" in result.out


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["calibrate", "{csv}"], 2, "the following arguments are required: --label"),
        (["calibrate", "{csv}", "--label", "label", "--mode", "exact"], 2, "invalid choice: 'exact'"),
        (
            ["calibrate", "{csv}", "--label", "label", "--aggregation", "max"],
            2,
            "--aggregation does not apply",
        ),
        (["calibrate", "{csv}", "--label", "grade"], 1, "has no label column 'grade'"),
        (["calibrate", "{csv}", "--label", "label", "--predicted", "answer"], 1, "has no column 'answer'"),
        (["calibrate", "{csv}", "--label", "label", "--bootstrap", "-3"], 2, "-3 is negative"),
        (["calibrate", "{one_class}", "--label", "label"], 1, "every one of the 2 labels is positive"),
        (["calibrate", "{bad_label}", "--label", "label"], 1, "line 3: label column 'label' holds 'good'"),
        (["calibrate", "{empty_text}", "--label", "label"], 1, "line 2: column 'predicted' is empty"),
    ],
)
def test_errors_are_one_line_with_the_fix(cli, write, argv, code, message):
    header = "ground_truth,predicted,label\n"
    files = {
        "csv": write("a.csv", header + "Paris,Paris,2\nParis,Lyon,0\n"),
        "one_class": write("b.csv", header + "Paris,Paris,2\nBerlin,Berlin,2\n"),
        "bad_label": write("c.csv", header + "Paris,Paris,2\nParis,Lyon,good\n"),
        "empty_text": write("d.csv", header + "Paris,,2\nParis,Lyon,0\n"),
    }
    result = cli(*[a.format(**files) for a in argv])
    assert result.code == code
    assert message in result.err
    assert result.err.count("\n") == 1 and result.out == ""


def test_calibrate_file_returns_what_the_command_prints(cli, minilm, tmp_path):
    """``simkernel.calibrate_file`` runs what ``simkernel calibrate`` runs: the same JSON, the same report
    lines (but the time), on both metrics that run a model."""
    import simkernel
    from simkernel.calibration import Calibration

    for argv, kwargs in [
        ((EXAMPLES / "answers.csv", "--positive-from", "2"), {"metric": "sas", "positive_from": 2}),
        ((EXAMPLES / "references.jsonl", "--mode", "reference"), {"metric": "reference"}),
    ]:
        out = tmp_path / "cli.json"
        result = cli("calibrate", *argv, "--label", "label", "--bootstrap", "1000", "--output-json", out)
        assert result.code == 0, result.err
        report = simkernel.calibrate_file(
            argv[0], label="label", bootstrap=1000, output_json=tmp_path / "api.json", **kwargs
        )
        assert isinstance(report.calibration, Calibration)
        assert (tmp_path / "api.json").read_bytes() == out.read_bytes()
        assert report.as_dict() == json.loads(out.read_text("utf-8"))
        assert all(report.as_dict()[k] == v for k, v in report.calibration.to_dict().items())
        printed = result.out.splitlines()
        assert report.lines()[:-1] == printed[:-1]
        assert printed[-1].startswith("  time        ") and report.lines()[-1].startswith("  time        ")


def test_calibrate_file_refuses_a_metric_without_a_model_and_a_misspelt_option():
    import simkernel
    from simkernel.errors import UsageError

    with pytest.raises(UsageError, match="calibrate needs a metric that runs a model; 'exact' runs none"):
        simkernel.calibrate_file(EXAMPLES / "answers.csv", label="label", metric="exact")
    with pytest.raises(TypeError, match="ground_truths"):
        simkernel.calibrate_file(EXAMPLES / "answers.csv", label="label", ground_truths="x")


def test_the_help_names_every_format_and_calibrate_reads_parquet(cli, minilm, tmp_path):
    """`--help` of score and calibrate names each format of the tables registry (the list is not written
    by hand), and calibrate reads a Parquet file to the report it gives for the same rows in CSV."""
    import argparse

    import pyarrow as pa
    import pyarrow.parquet as pq

    from simkernel.cli.parser import build_parser
    from simkernel.tables.formats import TABLE_FORMATS

    assert [f.title or f.name.upper() for f in TABLE_FORMATS.values()] == ["CSV", "TSV", "JSONL", "Parquet"]
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("score", "calibrate"):
        file_help = next(a.help for a in commands.choices[command]._actions if a.dest == "file")
        assert file_help.startswith("CSV, TSV, JSONL or Parquet file"), (command, file_help)
    rows = read_csv_rows(EXAMPLES / "answers.csv")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "answers.parquet")
    reports = []
    for source in (tmp_path / "answers.parquet", EXAMPLES / "answers.csv"):
        out = tmp_path / f"{source.name}.json"
        argv = ["--label", "label", "--positive-from", "2", "--bootstrap", "0", "--output-json", out]
        result = cli("calibrate", source, *argv)
        assert result.code == 0, result.err
        reports.append(json.loads(out.read_text("utf-8")))
    assert reports[0] == reports[1]


def test_a_file_whose_scores_do_not_vary_is_refused(cli, write, minilm):
    path = write("same.csv", "ground_truth,predicted,label\n" + "Paris,Paris,2\nParis,Paris,0\n" * 5)
    result = cli("calibrate", path, "--label", "label")
    assert result.code == 1 and result.out == ""
    assert f"{path}: every one of the 10 scores is 1: no threshold can split them" in result.err
