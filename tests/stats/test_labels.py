"""One rule for human labels in ``score``, ``calibrate`` and ``compare`` (:func:`simkernel.batch.rows.parse_label`):
numbers and numeric text, JSON booleans as 1 / 0, an empty cell or null as no label; text, NaN and
infinities stop the run naming the line. Each command is run on the same files and checked against scipy's
correlations of the labels read by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats

from simkernel.batch.rows import parse_label


@pytest.mark.parametrize(
    "value, expected",
    [("2", 2.0), (2, 2.0), (0.5, 0.5), (" 1e-1 ", 0.1), (True, 1.0), (False, 0.0), ("", None), ("  ", None)]
    + [(None, None)],
)
def test_parse_label(value, expected):
    assert parse_label(value, "label") == expected


@pytest.mark.parametrize("value", ["inf", "-Infinity", "nan", "NaN", math.nan, math.inf, "good", [1]])
def test_parse_label_refuses(value):
    with pytest.raises(ValueError, match="label column 'label' holds"):
        parse_label(value, "label")


ANSWERS = [("Paris", "Paris"), ("Berlin", "Bonn"), ("Rome", "Rome"), ("Oslo", "Oslo"), ("Lima", "Quito")] * 4


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_boolean_labels_are_1_and_0_in_every_command(cli, tmp_path, minilm):
    """JSONL true / false: score, compare and calibrate all take them as 1 / 0 (compare refused them)."""
    flags = [i % 3 != 1 for i in range(len(ANSWERS))]
    rows = [
        {"id": i, "ground_truth": t, "predicted": p, "ok": f, "score": 0.1 * (i % 7) + 0.3 * f}
        for i, ((t, p), f) in enumerate(zip(ANSWERS, flags, strict=True))
    ]
    path = _jsonl(tmp_path / "a.jsonl", rows)
    labels = np.array(flags, dtype=float)
    summary = tmp_path / "s.json"
    code, _, err = cli("score", path, "--mode", "exact", "--label", "ok", "-o", tmp_path / "o.jsonl", "--score-column", "exact",
                       "--summary-json", summary, "--resamples", "0")  # fmt: skip
    assert code == 0, err
    exact = np.array([float(t == p) for t, p in ANSWERS])
    data = json.loads(summary.read_text("utf-8"))
    assert data["labelled_rows"] == len(rows)
    assert data["pearson"] == pytest.approx(scipy.stats.pearsonr(exact, labels).statistic, abs=1e-12)

    out = tmp_path / "c.json"
    code, _, err = cli("compare", path, path, "--key", "id", "--label", "ok", "--output-json", out,
                       "--resamples", "0")  # fmt: skip
    assert code == 0, err
    scores = np.array([row["score"] for row in rows])
    found = json.loads(out.read_text("utf-8"))["correlations"]["A"]
    assert found["labelled_rows"] == len(rows)
    assert found["pearson"] == pytest.approx(scipy.stats.pearsonr(scores, labels).statistic, abs=1e-12)

    out = tmp_path / "k.json"
    code, _, err = cli("calibrate", path, "--label", "ok", "--output-json", out, "--bootstrap", "0",
                       "--resamples", "0", "-q")  # fmt: skip
    assert code == 0, err
    calibration = json.loads(out.read_text("utf-8"))
    assert calibration["n"] == len(rows) and calibration["positive_from"] == 0.5


@pytest.mark.parametrize("bad", ["inf", "nan"])
def test_a_label_that_is_not_finite_stops_every_command_naming_the_line(cli, tmp_path, bad):
    """A CSV label ``inf`` or ``nan`` was counted as unlabelled by score and calibrate (silently) and refused
    by compare: now each stops at it, naming the line and how to mark a row without a label."""
    lines = ["id,ground_truth,predicted,label,score"]
    lines += [f"{i},{t},{p},{i % 3},{0.1 * i}" for i, (t, p) in enumerate(ANSWERS)]
    lines[2] = lines[2].rsplit(",", 2)[0] + f",{bad},0.5"  # line 3 of the file (the header is line 1)
    lines[5] = lines[5].rsplit(",", 2)[0] + ",-inf,0.5"
    path = tmp_path / "a.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = (
        f"line 3: label column 'label' holds '{bad}', not a finite number; leave the cell empty for a row "
        "without a label (and 1 more bad row: line 6)"
    )
    for argv in (
        [
            "score",
            path,
            "--mode",
            "exact",
            "--label",
            "label",
            "-o",
            tmp_path / "o.csv",
            "--score-column",
            "s",
        ],
        ["calibrate", path, "--label", "label"],
        ["compare", path, path, "--key", "id", "--label", "label"],
        ["compare", path, "--predicted-b", "ground_truth", "--mode", "exact", "--label", "label"],
    ):
        code, out, err = cli(*argv)
        assert code == 1 and out == "", (argv, err)
        assert f"{path} {expected}" in err, (argv, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


@pytest.fixture(scope="module")
def minilm() -> str:
    from tests.components.conftest import require_stored_model

    return require_stored_model("sentence-transformers/all-MiniLM-L6-v2")
