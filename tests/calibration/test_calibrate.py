"""``simkernel.calibrate``: every figure checked against scikit-learn (f1_score, precision_score,
recall_score, cohen_kappa_score, roc_curve), the F1 optimum against an exhaustive search, the bootstrap
against an independent re-computation, and the errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, f1_score, precision_score, recall_score, roc_curve

import simkernel
from simkernel.calibration import Calibration, calibrate


def labelled(seed: int, n: int, decimals: int = 2):
    """Scores correlated with 0/1/2 labels, rounded so that many scores tie."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n).astype(float)
    scores = np.round(0.25 * labels + rng.normal(0.3, 0.25, n), decimals)
    return scores, labels


def sklearn_figures(scores, positive, threshold):
    predicted = scores >= threshold
    return {
        "precision": precision_score(positive, predicted, zero_division=0),
        "recall": recall_score(positive, predicted, zero_division=0),
        "f1": f1_score(positive, predicted, zero_division=0),
        "kappa": cohen_kappa_score(positive, predicted),
    }


def plain_f1(positive, predicted) -> float:
    """F1 from boolean masks (scikit-learn's f1_score gives the same, ~1,000x slower per call)."""
    tp = np.count_nonzero(positive & predicted)
    return 2 * tp / (np.count_nonzero(positive) + np.count_nonzero(predicted))


def exhaustive_best_f1(scores, positive):
    """The best F1 of "score >= t" over every distinct score t, by scikit-learn."""
    return max(f1_score(positive, scores >= t, zero_division=0) for t in np.unique(scores))


@pytest.mark.parametrize("seed", range(6))
def test_figures_match_scikit_learn_at_both_thresholds(seed):
    scores, labels = labelled(seed, 400)
    result = calibrate(scores, labels, bootstrap=0)
    positive = labels >= 1  # midpoint of 0..2
    assert result.positive_from == 1.0
    assert result.positives == int(positive.sum()) and result.n == 400
    for stats in (result.best, result.youden):
        reference = sklearn_figures(scores, positive, stats.threshold)
        for name, value in reference.items():
            assert getattr(stats, name) == pytest.approx(value, abs=1e-12), name
    assert result.f1 == pytest.approx(exhaustive_best_f1(scores, positive), abs=1e-12)
    fpr, tpr, _ = roc_curve(positive, scores)
    assert result.youden.youden_j == pytest.approx(float(np.max(tpr - fpr)), abs=1e-12)
    predicted = scores >= result.youden_threshold
    j = predicted[positive].mean() - predicted[~positive].mean()
    assert j == pytest.approx(result.youden.youden_j, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-20, 20).map(lambda v: v / 20), st.booleans()), min_size=2, max_size=60
    ).filter(lambda rows: 0 < sum(p for _, p in rows) < len(rows) and len({s for s, _ in rows}) > 1)
)
def test_f1_optimum_matches_an_exhaustive_search(rows):
    scores = np.array([s for s, _ in rows])
    positive = np.array([p for _, p in rows])
    result = calibrate(scores, positive.astype(float), bootstrap=0)
    assert result.f1 == pytest.approx(exhaustive_best_f1(scores, positive), abs=1e-12)
    assert result.f1 == pytest.approx(f1_score(positive, scores >= result.threshold), abs=1e-12)
    assert result.kappa == pytest.approx(cohen_kappa_score(positive, scores >= result.threshold), abs=1e-12)


def test_threshold_lies_half_way_to_the_next_lower_score():
    scores = [0.9, 0.8, 0.8, 0.3, 0.1]
    labels = [1, 1, 1, 0, 0]
    result = calibrate(scores, labels, bootstrap=0)
    assert result.threshold == pytest.approx((0.8 + 0.3) / 2)
    assert (result.precision, result.recall, result.f1, result.kappa) == (1.0, 1.0, 1.0, 1.0)
    # everything positive is best: the lowest score itself
    assert calibrate([0.5, 0.2, 0.4], [1, 1, 0], bootstrap=0).threshold == pytest.approx(0.2)


def test_f1_tie_takes_the_highest_threshold():
    # "score >= 0.9" and "score >= 0.3" both give F1 2/3 here
    scores = [0.9, 0.7, 0.5, 0.3]
    labels = [1, 0, 0, 1]
    assert f1_score(labels, [1, 0, 0, 0]) == pytest.approx(f1_score(labels, [1, 1, 1, 1]))
    assert calibrate(scores, labels, bootstrap=0).threshold == pytest.approx(0.8)


def test_positive_from_decides_the_classes():
    scores, labels = labelled(3, 300)
    strict = calibrate(scores, labels, positive_from=2, bootstrap=0)
    assert strict.positive_from == 2.0 and strict.positive_rule == "given"
    assert strict.positives == int((labels >= 2).sum())
    reference = sklearn_figures(scores, labels >= 2, strict.threshold)
    assert strict.f1 == pytest.approx(reference["f1"], abs=1e-12)
    assert strict.threshold > calibrate(scores, labels, bootstrap=0).threshold
    # 0/1 labels: the midpoint 0.5 makes 1 the positive class
    binary = calibrate(scores, (labels >= 1).astype(float), bootstrap=0)
    assert binary.positive_from == 0.5 and binary.positives == int((labels >= 1).sum())


def test_bootstrap_interval_matches_an_independent_recomputation():
    scores, labels = labelled(11, 150)
    result = calibrate(scores, labels, bootstrap=1000, seed=7)
    positive = labels >= 1
    rng = np.random.default_rng(7)
    found = []
    for _ in range(1000):
        rows = rng.integers(0, 150, 150)
        s, p = scores[rows], positive[rows]
        distinct = np.unique(s)[::-1]  # highest first
        f1s = [plain_f1(p, s >= t) for t in distinct]
        k = int(np.argmax(f1s))
        found.append((distinct[k] + distinct[k + 1]) / 2 if k + 1 < distinct.size else distinct[k])
    low, high = np.percentile(found, [2.5, 97.5])
    assert result.interval == pytest.approx((low, high), abs=1e-12)
    assert low <= result.threshold <= high or not (low <= high)


def test_bootstrap_is_seeded():
    scores, labels = labelled(5, 200)
    first = calibrate(scores, labels, bootstrap=1000, seed=1)
    assert calibrate(scores, labels, bootstrap=1000, seed=1).interval == first.interval
    assert calibrate(scores, labels, bootstrap=1000, seed=2).interval != first.interval
    assert calibrate(scores, labels, bootstrap=0).interval is None


def test_to_dict_has_exactly_the_documented_keys_and_is_json():
    scores, labels = labelled(1, 100)
    result = calibrate(scores, labels, bootstrap=1000, model="m", precision_mode="int8")
    data = result.to_dict()
    assert list(data) == [
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
    ]
    assert data["threshold"] == result.threshold and data["interval"] == list(result.interval)
    assert (data["model"], data["precision_mode"], data["n"]) == ("m", "int8", 100)
    assert json.loads(json.dumps(data)) == data


def test_public_name():
    assert simkernel.calibrate is calibrate
    assert isinstance(simkernel.calibrate([0.1, 0.9], [0, 1], bootstrap=0), Calibration)


@pytest.mark.parametrize(
    ("scores", "labels", "options", "message"),
    [
        ([0.1, 0.2], [0, 1, 1], {}, "2 scores and 3 labels"),
        ([0.1, math.nan], [0, 1], {}, "scores[1] is nan, not a finite number"),
        ([0.1, 0.2], [0, math.nan], {}, "leave unlabelled pairs out"),
        ([0.1, 0.2], ["0", "x"], {}, "labels must be a flat sequence of numbers"),
        ("0.1 0.2", [0, 1], {}, "got a single str"),
        ([0.5], [1], {}, "at least 2 labelled pairs"),
        ([0.1, 0.2], [1, 1], {}, "every one of the 2 labels is positive"),
        ([0.1, 0.2], [0, 1], {"positive_from": 5}, "every one of the 2 labels is negative"),
        ([0.1, 0.2], [1, 1], {}, r"or change positive_from \(--positive-from on the command line"),
        ([0.1, 0.2], [0, 1], {"positive_from": "1"}, "positive_from must be a number"),
        ([0.1, 0.2], [0, 1], {"positive_from": math.inf}, "positive_from must be a finite number"),
        (
            [0.1, 0.2],
            [0, 1],
            {"bootstrap": -1},
            r"bootstrap must be 0 \(no bootstrap interval\) or at least 1,000",
        ),
    ],
)
def test_bad_input_is_named(scores, labels, options, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        calibrate(scores, labels, **options)


def test_scores_that_do_not_vary_are_refused():
    """Every score the same: no threshold splits them (the run recommended their value, with a
    zero-width interval, and a 'use it' line)."""
    with pytest.raises(ValueError, match="every one of the 10 scores is 0.5: no threshold can split them"):
        calibrate([0.5] * 10, [0, 1] * 5)


def test_scores_no_better_than_chance_recommend_no_threshold():
    """Positives scored below every negative: the F1-best threshold calls every row positive, where
    scikit-learn's kappa is 0 and the ROC's best J is 0; no threshold is recommended, and the report says so
    in place of the 'use it' line."""
    from simkernel.batch.calibrate import CalibrationReport, report_lines
    from simkernel.calibration.binary import stats_of

    positive = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    scores = np.linspace(0.1, 0.9, 10)  # the positives lowest
    result = calibrate(scores, positive, bootstrap=0)
    fpr, tpr, _ = roc_curve(positive, scores)
    assert result.kappa == pytest.approx(cohen_kappa_score(positive, scores >= result.threshold)) == 0
    assert result.youden.youden_j == pytest.approx(max(tpr - fpr)) == 0
    assert result.recommended is False and result.to_dict()["recommended"] is False
    report = CalibrationReport(result, stats_of(scores, positive, 0.7), "d", "f.csv", 0, 0.0)
    printed = "\n".join(report_lines(report))
    assert "use it" not in printed
    assert "no threshold recommended: kappa 0.0000 at the F1-best threshold and Youden's J 0.0000" in printed
    good = calibrate(scores, 1 - positive, bootstrap=0)
    assert good.recommended and good.kappa > 0 and good.warning is None
    assert "  use it      simkernel score FILE --threshold" in "\n".join(
        report_lines(CalibrationReport(good, stats_of(scores, 1 - positive, 0.7), "d", "f.csv", 0, 0.0))
    )


def test_the_figures_at_the_chosen_threshold_are_said_to_be_in_sample():
    """Precision and recall at the threshold chosen on the same rows are optimistic and their intervals
    conditional on it (benchmarks/interval_coverage.py --calibration): the report says so beside them."""
    from simkernel.batch.calibrate import CalibrationReport, figures_with_intervals, report_lines
    from simkernel.calibration.binary import stats_of

    scores, labels = labelled(3, 120)
    positive = labels >= 1
    result = calibrate(scores, labels, bootstrap=0)
    figures = figures_with_intervals(scores, labels, positive, result.threshold, 1000, 0)
    report = CalibrationReport(result, stats_of(scores, positive, 0.7), "d", "f.csv", 0, 0.0, figures)
    printed = report_lines(report)
    at = next(
        i for i, line in enumerate(printed) if line.startswith(f"  at {result.threshold:.4f} precision")
    )
    assert printed[at + 1] == (
        "              in-sample: the threshold was chosen on these rows, so the figures at it are optimistic "
        "and their intervals hold for this threshold only; score other labelled rows at it for an unbiased figure"
    )
    expected = precision_score(positive, scores >= result.threshold)
    assert figures["precision"] == pytest.approx(expected, abs=1e-12)
