"""``simkernel compare`` and the intervals of ``simkernel score``'s summary, through the command line and the
Python API: the figures against simkernel.stats on the same numbers (itself checked against scipy in
test_intervals.py / test_paired.py), and every bad input stopping with one error that names the rows or
columns, with nothing written."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import simkernel
from simkernel.stats import bootstrap_intervals, paired_comparison, wilson

REPO = Path(__file__).resolve().parents[2]
ANSWERS = REPO / "examples" / "answers.csv"


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def runs(tmp_path):
    """Two scored runs of 200 questions, B = A + 0.04 on a random half, B's rows in another order."""
    rng = np.random.default_rng(12)
    a = rng.random(200)
    shifted = rng.random(200) < 0.5
    b = a + np.where(shifted, 0.04, 0.0)
    keys = [f"q{i}" for i in range(200)]
    path_a = write_csv(
        tmp_path / "a.csv", ["id", "score"], [[k, repr(float(v))] for k, v in zip(keys, a, strict=True)]
    )
    order = rng.permutation(200)
    path_b = write_csv(tmp_path / "b.csv", ["id", "score"], [[keys[i], repr(float(b[i]))] for i in order])
    return path_a, path_b, a, b, shifted


def test_two_scored_files_joined_on_a_key(cli, runs, tmp_path):
    path_a, path_b, a, b, shifted = runs
    out = tmp_path / "c.json"
    code, stdout, err = cli(
        "compare",
        path_a,
        path_b,
        "--key",
        "id",
        "--tolerance",
        "0.01",
        "--resamples",
        "2000",
        "--output-json",
        out,
    )
    assert code == 0, err
    data = json.loads(out.read_text("utf-8"))
    expected = paired_comparison(a, b, tolerance=0.01, resamples=2000, seed=0).as_dict()
    for name in ("n", "mean_a", "mean_b", "mean_difference", "p_value", "b_wins", "ties", "a_wins"):
        assert data[name] == pytest.approx(expected[name], abs=1e-12), name
    assert data["difference_interval"] == pytest.approx(expected["difference_interval"])
    assert data["difference_interval"]["low"] > 0 and data["p_value"] < 0.05
    assert data["b_wins"] == int(shifted.sum())
    assert [row["name"] for row in data["b_better_rows"]] == [f"id=q{i}" for i in expected["b_better_rows"]]
    assert f"B - A       +{np.mean(b - a):.4f} (95% CI" in stdout
    assert "paired sign-flip permutation test" in stdout


def test_identical_runs_find_no_difference(cli, runs):
    path_a, _, _, _, _ = runs
    code, stdout, err = cli("compare", path_a, path_a, "--key", "id", "--resamples", "1000")
    assert code == 0, err
    assert "B - A       +0.0000 (95% CI n/a: no variation: every value is the same)" in stdout
    assert "p-value     1 (" in stdout


def test_two_predicted_columns_of_one_file(cli, tmp_path):
    rows = [["Paris", "Paris", "Lyon", 2], ["Москва", "Москва", "Москва", 2], ["北京", "上海", "北京", 1]] * 5
    path = write_csv(tmp_path / "one.csv", ["ground_truth", "a", "b", "label"], rows)
    out = tmp_path / "c.json"
    code, stdout, err = cli(
        "compare", path, "--predicted", "a", "--predicted-b", "b", "--mode", "exact", "--label", "label",
        "--output-json", out, "--resamples", "1000",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out.read_text("utf-8"))
    a = np.array([float(r[1] == r[0]) for r in rows])
    b = np.array([float(r[2] == r[0]) for r in rows])
    assert data["mean_a"] == a.mean() and data["mean_b"] == b.mean()
    assert (data["b_wins"], data["a_wins"]) == (int((b > a).sum()), int((a > b).sum()))
    assert data["description"].startswith("mode exact")
    assert set(data["correlations"]) == {"A", "B", "B - A"}


def test_two_files_of_texts_scored_first(cli, tmp_path):
    truth = ["Paris", "Berlin", "Рим", "东京"] * 3
    a_rows = [[i, t, t if i % 2 else "x"] for i, t in enumerate(truth)]
    b_rows = [[i, t, t] for i, t in enumerate(truth)][::-1]
    path_a = write_csv(tmp_path / "a.csv", ["id", "ground_truth", "predicted"], a_rows)
    path_b = write_csv(tmp_path / "b.csv", ["id", "ground_truth", "predicted"], b_rows)
    result = simkernel.compare_files(path_a, path_b, key="id", score=True, metric="exact", resamples=1000)
    assert result.result.mean_a == 0.5 and result.result.mean_b == 1.0
    assert result.result.b_wins == 6 and result.result.ties == 6


def _nothing_written(tmp_path, before):
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "1 key(s) of {a} are missing from {b}: 'q3'"),
        ("extra", "1 key(s) of {b} are missing from {a}: 'new'"),
        ("duplicate", "{b} has duplicate keys in 'id': 'q5' on lines 2, 8"),
        ("no_score", "{b} has no score column 'score' (columns found: id, value)"),
        ("bad_score", "{b}: the score column 'score' holds no finite number on line(s) 4"),
        ("rows", "{a} has 10 rows and {b} has 9; give --key COLUMN"),
        ("no_key", "{b} has no key column 'id'"),
    ],
)
def test_bad_inputs_name_the_rows_and_write_nothing(cli, tmp_path, case, message):
    keys = [f"q{i}" for i in range(10)]
    path_a = write_csv(tmp_path / "a.csv", ["id", "score"], [[k, 0.5] for k in keys])
    rows = [[k, 0.6] for k in keys]
    header = ["id", "score"]
    key = ["--key", "id"]
    if case == "missing":
        rows = [r for r in rows if r[0] != "q3"]
    elif case == "extra":
        rows.append(["new", 0.1])
    elif case == "duplicate":
        rows = [["q5", 0.1], *rows]
    elif case == "no_score":
        header = ["id", "value"]
    elif case == "bad_score":
        rows[2][1] = "oops"
    elif case == "rows":
        rows, key = rows[:9], []
    elif case == "no_key":
        header = ["key", "score"]
    path_b = write_csv(tmp_path / "b.csv", header, rows)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, stdout, err = cli(
        "compare", path_a, path_b, *key, "--output-json", tmp_path / "c.json", "--report", tmp_path / "c.html"
    )
    assert code == 1, (stdout, err)
    assert message.format(a=path_a, b=path_b) in err
    assert err.count("\n") == 1 and stdout == ""
    _nothing_written(tmp_path, before)


def test_usage_errors(cli, runs):
    path_a, path_b, *_ = runs
    code, _, err = cli("compare", path_a)
    assert code == 2 and "one file with --predicted-b" in err
    code, _, err = cli("compare", path_a, path_b, "--model", "x")
    assert code == 2 and "model apply only when compare scores texts" in err


def test_score_summary_has_the_intervals(cli, tmp_path):
    out, summary_path = tmp_path / "out.csv", tmp_path / "s.json"
    code, _, err = cli(
        "score", ANSWERS, "--mode", "exact", "--label", "label", "--threshold", "0.5", "-o", out,
        "--summary-json", summary_path, "--resamples", "3000", "--seed", "7",
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads(summary_path.read_text("utf-8"))
    with out.open(encoding="utf-8", newline="") as handle:
        records = list(csv.DictReader(handle))
    scores = np.array([float(r["score"]) for r in records])
    labels = np.array([float(r["label"]) for r in records])
    expected = bootstrap_intervals(scores, labels, resamples=3000, seed=7)
    assert summary["intervals"]["pearson"] == expected["pearson"].as_dict()
    assert summary["intervals"]["spearman"] == expected["spearman"].as_dict()
    rate = wilson(int((scores >= 0.5).sum()), scores.size)
    assert summary["intervals"]["pass_rate"] == rate.as_dict()
    # exact match scores are 0 or 1: their mean is the proportion of matches, with Wilson's interval
    assert set(scores) == {0.0, 1.0} and summary["intervals"]["mean_score"] == rate.as_dict()
    assert (summary["resamples"], summary["seed"]) == (3000, 7)
    low, high = rate.low, rate.high
    assert (
        f"mean score  {scores.mean():.4f} (95% CI {low:.4f} to {high:.4f}, Wilson score: every score is 0 or 1)"
        in err
    )
    assert "BCa bootstrap over rows (3,000 resamples, seed 7" in err


def test_score_file_summary_has_the_intervals(tmp_path):
    summary = simkernel.score_file(ANSWERS, tmp_path / "o.csv", metric="exact", label="label", resamples=0)
    data = summary.as_dict()
    assert (
        data["intervals"]["pearson"] is None
        and data["no_interval"]["pearson"] == "no bootstrap (0 resamples)"
    )
    assert data["intervals"]["mean_score"]["method"] == "Wilson score"  # a closed form: no resamples needed
    summary = simkernel.score_file(ANSWERS, tmp_path / "o.csv", metric="exact", label="label", resamples=1000)
    assert summary.as_dict()["intervals"]["pearson"]["resamples"] == 1000


def test_report_without_matplotlib_names_the_install_command(cli, runs, tmp_path, monkeypatch):
    path_a, path_b, *_ = runs
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = cli("compare", path_a, path_b, "--key", "id", "--report", tmp_path / "r.html")
    assert code == 1 and "pip install 'simkernel[plot]'" in err
    code, _, err = cli(
        "score", ANSWERS, "--mode", "exact", "-o", tmp_path / "o.csv", "--report", tmp_path / "r.html"
    )
    assert code == 1 and "pip install 'simkernel[plot]'" in err
    _nothing_written(tmp_path, before)


def _question_rows(order):
    questions = [f"question {i}" for i in range(12)]
    return [[questions[i], f"truth {i}", f"answer {i}", 0.1 * (i % 7)] for i in order]


def test_rows_paired_in_order_must_be_the_same_questions(cli, tmp_path):
    """Without --key, a file whose rows are in another order stops the run, naming the first line that
    differs and --key; the predicted answers may differ (two systems), the questions may not."""
    header = ["question", "ground_truth", "predicted", "score"]
    path_a = write_csv(tmp_path / "a.csv", header, _question_rows(range(12)))
    same = _question_rows(range(12))
    for row in same:
        row[2] = row[2].upper()  # B's own answers
    path_b = write_csv(tmp_path / "b.csv", header, same)
    out = tmp_path / "c.json"
    code, stdout, err = cli("compare", path_a, path_b, "--resamples", "1000", "--output-json", out)
    assert code == 0, err
    assert "  paired      in order; 'question', 'ground_truth' equal on every row" in stdout
    assert json.loads(out.read_text("utf-8"))["checked_columns"] == ["question", "ground_truth"]

    order = [0, 1, 2, 3, 5, 4, *range(6, 12)]  # two rows swapped
    path_c = write_csv(tmp_path / "shuffled.csv", header, _question_rows(order))
    before = sorted(p.name for p in tmp_path.iterdir())
    code, stdout, err = cli("compare", path_a, path_c, "--output-json", tmp_path / "d.json")
    assert code == 1 and stdout == ""
    assert (
        f"{path_a} line 6 and {path_c} line 6 differ in 'question' ('question 4' against 'question 5'; "
        "2 of 12 rows differ): give --key COLUMN"
    ) in err
    _nothing_written(tmp_path, before)
    # the same files joined on a key compare as they should
    code, _, err = cli("compare", path_a, path_c, "--key", "question", "--resamples", "1000")
    assert code == 0, err


def test_a_renamed_ground_truth_column_is_checked_and_no_shared_column_is_said(cli, tmp_path):
    path_a = write_csv(tmp_path / "a.csv", ["truth", "score"], [[f"t{i}", 0.5] for i in range(10)])
    path_b = write_csv(tmp_path / "b.csv", ["truth", "score"], [[f"t{9 - i}", 0.6] for i in range(10)])
    code, _, err = cli("compare", path_a, path_b, "--ground-truth", "truth")
    assert code == 1 and "differ in 'truth' ('t0' against 't9'; 10 of 10 rows differ)" in err
    path_c = write_csv(tmp_path / "c.csv", ["id", "score"], [[i, 0.5 + 0.01 * i] for i in range(10)])
    code, stdout, err = cli("compare", path_c, path_c, "--resamples", "1000")
    assert code == 0, err
    assert "  paired      in order, unchecked: the files share none of the columns" in stdout
    assert "give --key COLUMN to join the rows on an id" in stdout


def test_each_column_of_a_multi_column_summary_has_its_intervals():
    """A metric of several score columns: each column's line carries the intervals of its mean and
    correlations (they were computed but not printed)."""
    from simkernel.batch.summary import summarize

    rng = np.random.default_rng(5)
    n = 60
    table = rng.random((n, 3))
    labels = np.round(table[:, 2] * 2 + rng.normal(0, 0.5, n))
    summary = summarize(
        scores=table.ravel(), labels=list(labels), label_column="label", threshold=None, description="m",
        elapsed_s=0.0, load_s=0.0, score_s=1.0, output="-", columns=("s_P", "s_R", "s_F"), primary=2,
        resamples=1000, seed=3,
    )  # fmt: skip
    printed = summary.lines()
    for index, name in enumerate(("s_P", "s_R", "s_F")):
        x = table[:, index]
        found = bootstrap_intervals(x, labels, resamples=1000, seed=3)
        mean, r, rho = found["mean"], found["pearson"], found["spearman"]
        assert r.estimate == pytest.approx(scipy.stats.pearsonr(x, labels).statistic, abs=1e-12)
        assert rho.estimate == pytest.approx(scipy.stats.spearmanr(x, labels).statistic, abs=1e-12)
        expected = (
            f"  column      {name}: mean {x.mean():.4f} [{mean.low:.4f}, {mean.high:.4f}], "
            f"vs 'label' Pearson {r.estimate:.4f} [{r.low:.4f}, {r.high:.4f}], "
            f"Spearman {rho.estimate:.4f} [{rho.low:.4f}, {rho.high:.4f}]"
        )
        assert expected in printed, (expected, printed)
        assert summary.as_dict()["columns"][index]["intervals"]["mean_score"] == mean.as_dict()


def test_compare_prints_each_mean_with_its_interval(cli, runs, tmp_path):
    path_a, path_b, a, b, _ = runs
    out = tmp_path / "c.json"
    code, stdout, err = cli(
        "compare", path_a, path_b, "--key", "id", "--resamples", "1000", "--output-json", out
    )
    assert code == 0, err
    data = json.loads(out.read_text("utf-8"))
    parts = []
    for side, values in (("A", a), ("B", b)):
        found = bootstrap_intervals(values, statistics=("mean",), resamples=1000, seed=0)["mean"]
        assert data[f"mean_{side.lower()}_interval"] == found.as_dict()
        assert found.estimate == pytest.approx(np.mean(values), abs=1e-12)
        parts.append(f"{side} {np.mean(values):.4f} [{found.low:.4f}, {found.high:.4f}]")
    assert f"  mean        {', '.join(parts)}" in stdout


def test_compare_says_why_a_constant_run_has_no_correlation(cli, tmp_path):
    keys = [f"q{i}" for i in range(30)]
    path_a = write_csv(
        tmp_path / "a.csv", ["id", "score", "label"], [[k, i / 30, i % 3] for i, k in enumerate(keys)]
    )
    path_b = write_csv(
        tmp_path / "b.csv", ["id", "score", "label"], [[k, 0.5, i % 3] for i, k in enumerate(keys)]
    )
    code, stdout, err = cli(
        "compare", path_a, path_b, "--key", "id", "--label", "label", "--resamples", "1000"
    )
    assert code == 0, err
    assert "nan" not in stdout
    assert (
        "  vs labels   B: Pearson n/a (constant scores or labels), Spearman n/a (constant scores or labels)"
        in stdout
    )
    assert "B 0.5000 [n/a: no variation: every value is the same]" in stdout


def test_ten_exact_matches_of_ten_print_wilsons_interval_twice(cli, tmp_path):
    """--mode exact, 10 of 10 matching: the mean score (a proportion) and the pass rate both get Wilson's
    0.7225 to 1 (by hand), no longer a mean of "1.0000 to 1.0000" beside a pass rate of 72.2% to 100%."""
    path = write_csv(
        tmp_path / "e.csv", ["ground_truth", "predicted"], [[f"a{i}", f"a{i}"] for i in range(10)]
    )
    code, _, err = cli("score", path, "--mode", "exact", "--threshold", "1", "-o", tmp_path / "o.csv")
    assert code == 0, err
    z = scipy.stats.norm.ppf(0.975)
    low = 1 / (1 + z * z / 10)  # Wilson's low end at 10 of 10: n / (n + z^2)
    assert f"mean score  1.0000 (95% CI {low:.4f} to 1.0000, Wilson score: every score is 0 or 1)" in err
    assert f"pass rate   100.0% (10 of 10 with score >= 1) (95% CI {low:.1%} to 100.0%)" in err


def test_compare_gives_the_paired_differences_of_the_correlations(cli, tmp_path):
    """With --label: B's Pearson and Spearman minus A's on the rows labelled in both, with intervals from
    the same resamples of the rows for both runs (checked against loops in test_intervals.py); the
    estimates against scipy's."""
    from simkernel.stats import paired_difference_intervals

    rng = np.random.default_rng(31)
    n = 80
    truth = rng.random(n)
    labels = np.round(2 * truth + rng.normal(0, 0.3, n))
    a = truth + rng.normal(0, 0.3, n)
    b = truth + rng.normal(0, 0.1, n)
    keys = [f"q{i}" for i in range(n)]
    rows_a = [[k, repr(float(s)), repr(float(y))] for k, s, y in zip(keys, a, labels, strict=True)]
    rows_b = [[k, repr(float(s)), repr(float(y))] for k, s, y in zip(keys, b, labels, strict=True)]
    rows_b[3][2] = ""  # a row without B's label: left out of the difference
    path_a = write_csv(tmp_path / "a.csv", ["id", "score", "label"], rows_a)
    path_b = write_csv(tmp_path / "b.csv", ["id", "score", "label"], rows_b[::-1])
    out = tmp_path / "c.json"
    code, stdout, err = cli(
        "compare",
        path_a,
        path_b,
        "--key",
        "id",
        "--label",
        "label",
        "--resamples",
        "1000",
        "--output-json",
        out,
    )
    assert code == 0, err
    both = np.arange(n) != 3
    found = paired_difference_intervals(a[both], labels[both], b[both], labels[both], resamples=1000, seed=0)
    data = json.loads(out.read_text("utf-8"))["correlations"]["B - A"]
    assert data["labelled_rows"] == n - 1
    for name, stat in (("pearson", scipy.stats.pearsonr), ("spearman", scipy.stats.spearmanr)):
        expected = stat(b[both], labels[both]).statistic - stat(a[both], labels[both]).statistic
        assert data[name] == pytest.approx(expected, abs=1e-12)
        assert data["intervals"][name] == found[name].as_dict()
    r, rho = found["pearson"], found["spearman"]
    assert r.low > 0  # B's less noisy scores follow the labels better
    assert (
        f"  vs labels   B - A: Pearson {r.estimate:+.4f} [{r.low:.4f}, {r.high:.4f}], Spearman "
        f"{rho.estimate:+.4f} [{rho.low:.4f}, {rho.high:.4f}] (paired: the same resamples of the 79 rows "
        "labelled in both)"
    ) in stdout
