"""simkernel.stats' intervals against independent references: numpy loops over the same resamples with a
BCa written here from the textbook formulas (scipy.stats.norm), scipy.stats.bootstrap on its own resamples,
Wilson's formula by hand, and the coverage of the 95% intervals over 1,000 seeded trials."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from simkernel.stats import bootstrap_intervals, pearson, spearman, wilson
from simkernel.stats.intervals import JACKKNIFE_GROUPS, resample_counts

STATISTICS = {
    "mean": lambda x, y: float(np.mean(x)),
    "pearson": lambda x, y: float(scipy.stats.pearsonr(x, y).statistic),
    "spearman": lambda x, y: float(scipy.stats.spearmanr(x, y).statistic),
}


def textbook_bca_ends(estimate, boot, jack, level):
    """The textbook BCa interval's ends (Efron & Tibshirani 1993, 14.3) from the bootstrap values ``boot``
    and the jackknife values ``jack`` of a statistic whose estimate is ``estimate`` (ties in z0 counted
    half)."""
    p0 = (np.sum(boot < estimate) + 0.5 * np.sum(boot == estimate)) / boot.size
    z0 = scipy.stats.norm.ppf(p0)
    d = jack.mean() - jack
    a = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    ends = []
    for tail in ((1 - level) / 2, (1 + level) / 2):
        z = z0 + scipy.stats.norm.ppf(tail)
        ends.append(scipy.stats.norm.cdf(z0 + z / (1 - a * z)))
    return np.percentile(boot, [100 * ends[0], 100 * ends[1]])


def reference_bca(x, y, name, resamples, seed, level=0.95):
    """BCa by loops: each resample rebuilt as rows (np.repeat of the counts, the rows in x's order as the
    library takes them), the statistic by scipy, the jackknife by deleting each row, then Efron's formulas."""
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    stat = STATISTICS[name]
    estimate = stat(xs, ys)
    boot = []
    for counts in resample_counts(x.size, resamples, seed):
        for row in counts.astype(int):
            rows = np.repeat(np.arange(x.size), row)
            a, b = xs[rows], ys[rows]
            if name != "mean" and (np.ptp(a) == 0 or np.ptp(b) == 0):
                continue
            boot.append(stat(a, b))
    boot = np.asarray(boot)
    jack = np.asarray([stat(np.delete(xs, i), np.delete(ys, i)) for i in range(x.size)])
    return estimate, textbook_bca_ends(estimate, boot, jack, level)


@pytest.mark.parametrize("ties", [False, True])
def test_bca_matches_loops_over_the_same_resamples(ties):
    rng = np.random.default_rng(7)
    n = 40
    x = rng.integers(0, 6, n).astype(float) if ties else rng.standard_normal(n)
    y = np.round(x + rng.standard_normal(n)) if ties else x + rng.standard_normal(n)
    found = bootstrap_intervals(x, y, resamples=1000, seed=11)
    for name in STATISTICS:
        estimate, (low, high) = reference_bca(x, y, name, 1000, 11)
        got = found[name]
        assert got is not None and got.method == "BCa bootstrap"
        assert got.estimate == pytest.approx(estimate, abs=1e-12)
        assert (got.low, got.high) == pytest.approx((low, high), abs=1e-9), name


def test_estimates_are_the_summary_figures():
    rng = np.random.default_rng(3)
    x, y = rng.random(200), rng.integers(0, 3, 200).astype(float)
    found = bootstrap_intervals(x, y, resamples=1000)
    assert found["mean"].estimate == float(x.mean())
    assert found["pearson"].estimate == pearson(x, y)
    assert found["spearman"].estimate == spearman(x, y)


def test_agrees_with_scipy_bootstrap_bca():
    """scipy draws its own resamples: the ends agree within the Monte Carlo error of 20,000 resamples."""
    rng = np.random.default_rng(5)
    x = rng.exponential(size=80)
    y = x + rng.standard_normal(80)
    ours = bootstrap_intervals(x, y, resamples=20_000, seed=1)
    theirs = {
        "mean": scipy.stats.bootstrap((x,), np.mean, n_resamples=20_000, method="BCa", rng=2),
        "pearson": scipy.stats.bootstrap(
            (x, y),
            lambda a, b, axis=-1: _pearson_along(a, b, axis),
            paired=True,
            n_resamples=20_000,
            method="BCa",
            rng=2,
        ),
    }
    for name, result in theirs.items():
        low, high = result.confidence_interval
        width = high - low
        assert abs(ours[name].low - low) < 0.05 * width, name
        assert abs(ours[name].high - high) < 0.05 * width, name


def _pearson_along(a, b, axis):
    a = a - a.mean(axis=axis, keepdims=True)
    b = b - b.mean(axis=axis, keepdims=True)
    return (a * b).sum(axis) / np.sqrt((a * a).sum(axis) * (b * b).sum(axis))


def test_coverage_of_1000_seeded_trials():
    """The 95% intervals of the mean, Pearson's r and Spearman's rho of bivariate normal samples (n = 100,
    rho = 0.5, known mean 1) cover the truth in 93-97% of 1,000 trials (1,000 resamples each)."""
    rho, n, trials = 0.5, 100, 1000
    truth = {"mean": 1.0, "pearson": rho, "spearman": 6 / math.pi * math.asin(rho / 2)}
    rng = np.random.default_rng(2026)
    hits = dict.fromkeys(truth, 0)
    for trial in range(trials):
        z = rng.standard_normal((n, 2))
        x = 1.0 + z[:, 0]
        y = rho * z[:, 0] + math.sqrt(1 - rho * rho) * z[:, 1]
        found = bootstrap_intervals(x, y, resamples=1000, seed=trial)
        for name, value in truth.items():
            hits[name] += found[name].contains(value)
    coverage = {name: count / trials for name, count in hits.items()}
    print(f"coverage of 1,000 trials: {coverage}")
    for name, value in coverage.items():
        assert 0.93 <= value <= 0.97, (name, value)


def test_wilson_by_hand_and_its_coverage():
    for k, n in ((0, 10), (3, 10), (10, 10), (81, 263), (1, 1)):
        z = scipy.stats.norm.ppf(0.975)
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        got = wilson(k, n)
        assert got.estimate == p and got.method == "Wilson score"
        assert (got.low, got.high) == pytest.approx((max(0, centre - half), min(1, centre + half)), abs=1e-12)
    assert wilson(0, 0) is None
    # coverage over the binomial distribution itself (exact, no simulation): near 95% at p = 0.3, n = 50
    n, p = 50, 0.3
    covered = sum(
        scipy.stats.binom.pmf(k, n, p) for k in range(n + 1) if wilson(k, n).low <= p <= wilson(k, n).high
    )
    assert 0.93 <= covered <= 0.97


def test_no_interval_where_none_exists():
    assert bootstrap_intervals([1.0, 2.0, 3.0], resamples=0, statistics=("mean",)) == {"mean": None}
    constant = bootstrap_intervals([0.5] * 10, list(range(10)), resamples=1000)
    assert constant["pearson"] is None and constant["spearman"] is None
    assert constant["mean"] is None
    two = bootstrap_intervals([0.1, 0.9], [0.0, 1.0], resamples=1000)
    assert two == dict.fromkeys(("mean", "pearson", "spearman"))
    assert two.reasons == dict.fromkeys(("mean", "pearson", "spearman"), "fewer than 10 rows")


def test_seeded_and_the_grouped_jackknife(monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.exponential(size=1500)
    y = np.round(x + rng.standard_normal(1500))
    first = bootstrap_intervals(x, y, resamples=1000, seed=4)
    assert bootstrap_intervals(x, y, resamples=1000, seed=4) == first
    assert bootstrap_intervals(x, y, resamples=1000, seed=5) != first
    # above JACKKNIFE_GROUPS rows the jackknife leaves out groups: the ends stay those of the exact one
    assert x.size > JACKKNIFE_GROUPS
    monkeypatch.setattr("simkernel.stats.intervals.JACKKNIFE_GROUPS", x.size)
    exact = bootstrap_intervals(x, y, resamples=1000, seed=4)
    for name, interval in exact.items():
        width = interval.high - interval.low
        assert abs(first[name].low - interval.low) < 0.05 * width, name
        assert abs(first[name].high - interval.high) < 0.05 * width, name


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: bootstrap_intervals([1.0, math.nan], statistics=("mean",)), r"x\[1\] is nan"),
        (lambda: bootstrap_intervals([1.0, 2.0], [1.0]), "one value per row"),
        (lambda: bootstrap_intervals([1.0, 2.0], statistics=("median",)), "unknown statistic 'median'"),
        (lambda: bootstrap_intervals([1.0, 2.0], statistics=("pearson",)), "pearson and spearman need y"),
        (lambda: bootstrap_intervals([1.0], statistics=("mean",), resamples=-1), "resamples must be 0"),
        (
            lambda: bootstrap_intervals([1.0], statistics=("mean",), level=95),
            "level must be a number between",
        ),
        (lambda: wilson(5, 3), "0 <= successes <= n"),
    ],
)
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_poisson_counts_above_poisson_rows():
    """Above POISSON_ROWS rows each row's count is Poisson(1): the frequencies of 0..4 within 4 standard
    errors of scipy's pmf, and the intervals within a few percent of the multinomial bootstrap's."""
    from simkernel.stats.intervals import POISSON_ROWS

    n = POISSON_ROWS + 1000
    counts = np.concatenate(list(resample_counts(n, 400, seed=3))).astype(int).ravel()
    frequencies = np.bincount(counts, minlength=9)[:5] / counts.size
    pmf = scipy.stats.poisson.pmf(range(5), 1.0)
    assert np.all(np.abs(frequencies - pmf) < 4 * np.sqrt(pmf * (1 - pmf) / counts.size) + 2**-16)
    rng = np.random.default_rng(9)
    x = rng.exponential(size=n)
    y = np.round(x + rng.standard_normal(n))
    poisson = bootstrap_intervals(x, y, resamples=4000, seed=1)
    import simkernel.stats.intervals as intervals

    original = intervals.POISSON_ROWS
    try:
        intervals.POISSON_ROWS = n  # the multinomial resamples for the same rows
        multinomial = bootstrap_intervals(x, y, resamples=4000, seed=1)
    finally:
        intervals.POISSON_ROWS = original
    for name, interval in multinomial.items():
        width = interval.high - interval.low
        assert abs(poisson[name].low - interval.low) < 0.08 * width, name
        assert abs(poisson[name].high - interval.high) < 0.08 * width, name


@pytest.mark.parametrize("resamples", [1, 2, 5, 999])
def test_too_few_resamples_are_refused_everywhere_in_python(resamples, tmp_path):
    """0 (no bootstrap) or at least 1,000 resamples: fewer leave a 95% interval's ends to chance. Each way
    in refuses them, naming its own argument and the minimum, before any work."""
    import simkernel
    from simkernel.calibration import calibrate
    from simkernel.errors import UsageError
    from simkernel.stats import paired_comparison

    x = np.arange(40.0)
    message = f"must be 0 \\(no bootstrap interval\\) or at least 1,000 .* got {resamples}$"
    with pytest.raises(ValueError, match="^resamples " + message):
        bootstrap_intervals(x, statistics=("mean",), resamples=resamples)
    with pytest.raises(ValueError, match="^resamples " + message):
        paired_comparison(x, x + 1, resamples=resamples)
    with pytest.raises(ValueError, match="^bootstrap " + message):
        calibrate(x, x > 20, bootstrap=resamples)
    answers = Path(__file__).resolve().parents[2] / "examples" / "answers.csv"
    with pytest.raises(UsageError, match="^--resamples " + message):
        simkernel.score_file(answers, tmp_path / "o.csv", metric="exact", resamples=resamples)
    with pytest.raises(UsageError, match="^--resamples " + message):
        simkernel.compare_files(answers, answers, score=True, metric="exact", resamples=resamples)
    for name in ("resamples", "bootstrap"):
        with pytest.raises(UsageError, match=f"^--{name} " + message):
            simkernel.calibrate_file(answers, label="label", **{name: resamples})
    assert list(tmp_path.iterdir()) == []


def test_the_fewest_resamples_allowed_give_intervals():
    x = np.random.default_rng(0).random(40)
    assert bootstrap_intervals(x, statistics=("mean",), resamples=1000)["mean"] is not None
    assert bootstrap_intervals(x, statistics=("mean",), resamples=0)["mean"] is None


@pytest.mark.parametrize(
    "command, option", [("score", "--resamples"), ("compare", "--resamples"), ("calibrate", "--bootstrap")]
)
def test_the_command_line_refuses_too_few_resamples(command, option, capsys):
    from simkernel.cli import main

    answers = str(Path(__file__).resolve().parents[2] / "examples" / "answers.csv")
    argv = [command, answers, *(["--label", "label"] if command == "calibrate" else []), option, "5"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"argument {option}: must be 0 (no bootstrap interval) or at least 1,000" in err and "got 5" in err


def test_wilson_holds_its_estimate_and_ends_at_exactly_0_and_1():
    """At 0 of n the low end is 0 and at n of n the high end is 1, exactly (the formula by hand gives
    2.8e-17 and 0.9999999999999999 there); every interval holds k / n."""
    z = scipy.stats.norm.ppf(0.975)
    for n in range(1, 301):
        for k in range(n + 1):
            got = wilson(k, n)
            assert got.low <= k / n <= got.high, (k, n)
            assert (got.low == 0.0) == (k == 0) and (got.high == 1.0) == (k == n), (k, n, got)
    assert wilson(13, 13).high == 1.0 and wilson(0, 5).low == 0.0
    # elsewhere the ends are the formula's
    p, n = 12 / 13, 13
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson(12, 13).high == pytest.approx((p + z * z / (2 * n)) / (1 + z * z / n) + half, abs=1e-15)


@pytest.mark.parametrize(
    "x, y, name, reason",
    [
        ([0.5] * 30, None, "mean", "no variation: every value is the same"),
        ([0.1] * 30, None, "mean", "no variation: every value is the same"),
        (list(range(20)), list(range(20)), "pearson", "no variation among the resamples"),
        (list(range(20)), [-v for v in range(20)], "spearman", "no variation among the resamples"),
        ([0.5] * 20, list(range(20)), "pearson", "no correlation: constant scores or labels"),
        ([1.0, 2.0, 4.0], [1.0, 3.0, 2.0], "pearson", "fewer than 10 rows"),
    ],
)
def test_a_degenerate_bootstrap_gives_no_interval_and_says_why(x, y, name, reason):
    """A distribution of bootstrap values with no spread (a constant column's mean, r = 1 in every
    resample) gives no interval rather than a zero-width one that may not even hold its estimate."""
    found = bootstrap_intervals(x, y, statistics=(name,), resamples=1000)
    assert found[name] is None and found.reasons == {name: reason}


def test_a_constant_paired_difference_has_no_interval():
    from simkernel.stats import paired_comparison

    result = paired_comparison([0.5] * 30, [0.6] * 30, resamples=1000)
    assert result.mean_difference == pytest.approx(0.1) and result.difference is None
    assert result.no_interval == dict.fromkeys(
        ("difference", "mean_a", "mean_b"), "no variation: every value is the same"
    )
    assert result.as_dict()["difference_interval"] is None


def test_the_mean_of_0_1_scores_is_a_proportion_with_wilsons_interval():
    """Scores that are all 0 or 1 (exact match): the mean gets Wilson's interval, whose coverage is computed
    here exactly over the binomial distribution (scipy's pmf, no simulation): 93.9% for Bernoulli(0.95) and
    30 rows, where the bootstrap's covers under 85% (the reviewer's simulation: 77%)."""
    from simkernel.stats import mean_interval

    z = scipy.stats.norm.ppf(0.975)
    for k, n in ((10, 10), (7, 10), (0, 4), (28, 30)):
        found = mean_interval([1.0] * k + [0.0] * (n - k), resamples=1000)["mean"]
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        assert found.method == "Wilson score" and found.estimate == p
        assert (found.low, found.high) == pytest.approx(
            (max(0, centre - half), min(1, centre + half)), abs=1e-12
        )
    n, p = 30, 0.95
    pmf = scipy.stats.binom.pmf(range(n + 1), n, p)

    def coverage(interval_of):
        return sum(pmf[k] for k in range(n + 1) if (i := interval_of(k)) is not None and i.low <= p <= i.high)

    ones = [np.r_[np.ones(k), np.zeros(n - k)] for k in range(n + 1)]
    assert 0.93 <= coverage(lambda k: mean_interval(ones[k], resamples=1000)["mean"]) <= 0.97
    bootstrap = coverage(lambda k: bootstrap_intervals(ones[k], statistics=("mean",), resamples=1000)["mean"])
    assert bootstrap < 0.85


def test_the_mean_of_a_constant_column_has_no_interval():
    from simkernel.stats import mean_interval

    found = mean_interval([0.5] * 30, resamples=1000)
    assert found["mean"] is None and found.reasons == {"mean": "no variation: every value is the same"}
    varied = mean_interval([0.5] * 29 + [0.6], resamples=1000)["mean"]
    assert varied.method == "BCa bootstrap" and varied.low < varied.high


def reference_paired_bca(xa, ya, xb, yb, name, resamples, seed, level=0.95):
    """The paired difference's BCa by loops: each resample's rows (the counts of the rows in their own
    order) give both systems' statistic by scipy, their difference; the jackknife deletes each row from
    both; then Efron's formulas."""
    stat = STATISTICS[name]
    estimate = stat(xb, yb) - stat(xa, ya)
    boot = []
    for counts in resample_counts(xa.size, resamples, seed):
        for row in counts.astype(int):
            rows = np.repeat(np.arange(xa.size), row)
            if name != "mean" and min(np.ptp(v[rows]) for v in (xa, ya, xb, yb)) == 0:
                continue
            boot.append(stat(xb[rows], yb[rows]) - stat(xa[rows], ya[rows]))
    boot = np.asarray(boot)
    jack = np.asarray(
        [
            stat(np.delete(xb, i), np.delete(yb, i)) - stat(np.delete(xa, i), np.delete(ya, i))
            for i in range(xa.size)
        ]
    )
    return estimate, textbook_bca_ends(estimate, boot, jack, level)


@pytest.mark.parametrize("same_labels", [True, False])
def test_paired_difference_of_correlations_matches_loops_over_the_same_resamples(same_labels):
    """B - A of Pearson and Spearman (and the mean) from the same resamples of the rows, against scipy's
    statistics on each resample's rows written out and the textbook BCa."""
    from simkernel.stats import paired_difference_intervals

    rng = np.random.default_rng(21)
    n = 40
    truth = rng.standard_normal(n)
    labels = np.round(truth + rng.standard_normal(n))
    xa = truth + rng.normal(0, 1.0, n)
    xb = np.round(truth + rng.normal(0, 0.6, n), 1)  # ties in B's scores
    yb = labels if same_labels else np.round(truth + rng.standard_normal(n))
    found = paired_difference_intervals(
        xa, labels, xb, yb, statistics=("mean", "pearson", "spearman"), resamples=1000, seed=5
    )
    for name in STATISTICS:
        estimate, (low, high) = reference_paired_bca(xa, labels, xb, yb, name, 1000, 5)
        got = found[name]
        assert got is not None and got.method == "BCa bootstrap"
        assert got.estimate == pytest.approx(estimate, abs=1e-12)
        assert (got.low, got.high) == pytest.approx((low, high), abs=1e-9), name


def test_paired_difference_of_identical_systems_has_no_interval():
    from simkernel.stats import paired_difference_intervals

    rng = np.random.default_rng(2)
    x, y = rng.random(30), rng.integers(0, 3, 30).astype(float)
    found = paired_difference_intervals(x, y, x.copy(), y.copy(), resamples=1000)
    assert found == {"pearson": None, "spearman": None}
    assert found.reasons == dict.fromkeys(("pearson", "spearman"), "no variation among the resamples")


def test_no_bootstrap_interval_below_10_rows():
    """Below 10 rows a "95%" bootstrap interval covers far less than 95% (benchmarks/interval_coverage.py:
    the mean of normal data 88% at 8 rows, Pearson 60% at 3): none is given, and the reason is said."""
    rng = np.random.default_rng(4)
    x, y = rng.random(10), rng.random(10)
    nine = bootstrap_intervals(x[:9], y[:9], resamples=1000)
    assert nine == dict.fromkeys(("mean", "pearson", "spearman"))
    assert set(nine.reasons.values()) == {"fewer than 10 rows"}
    ten = bootstrap_intervals(x, y, resamples=1000)
    assert all(interval is not None for interval in ten.values())


def test_three_paired_rows_give_the_exact_test_and_no_interval():
    """The reviewer's 3 rows: the exact sign-flip p is 0.25 (2 of the 8 sign patterns as extreme, by hand),
    where the bootstrap printed an interval that excluded 0."""
    from simkernel.stats import paired_comparison

    result = paired_comparison([0.50, 0.60, 0.55], [0.52, 0.71, 0.58], resamples=1000)
    assert result.exact and result.p_value == 2 / 8
    assert result.difference is None and result.no_interval["difference"] == "fewer than 10 rows"


def test_the_summary_says_why_a_small_sample_has_no_interval():
    from simkernel.batch.summary import summarize

    summary = summarize(
        scores=[0.1, 0.5, 0.3, 0.9, 0.7, 0.2, 0.4, 0.6], labels=[0, 1, 0, 2, 2, 0, 1, 1], label_column="label",
        threshold=None, description="m", elapsed_s=0.0, load_s=0.0, score_s=1.0, output="-", resamples=1000,
    )  # fmt: skip
    printed = summary.lines()
    assert "  mean score  0.4625 (95% CI n/a: fewer than 10 rows)" in printed
    assert any(
        line.endswith("Pearson 95% CI n/a: fewer than 10 rows, Spearman 95% CI n/a: fewer than 10 rows")
        for line in printed
    ), printed
    assert summary.as_dict()["no_interval"]["mean_score"] == "fewer than 10 rows"
