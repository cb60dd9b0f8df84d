"""simkernel.stats.paired_comparison: the sign-flip test against scipy.stats.permutation_test, a known shift
on a random half of the rows found, identical runs found equal, and the counts by hand."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from simkernel.stats import paired_comparison
from simkernel.stats.paired import sign_flip_p_value


def _scipy_p(d, permutations, rng=0):
    result = scipy.stats.permutation_test(
        (d,),
        lambda s, axis=-1: np.sum(s, axis=axis),
        permutation_type="samples",
        n_resamples=permutations,
        alternative="two-sided",
        rng=rng,
        vectorized=True,
    )
    return result.pvalue


def test_exact_p_value_equals_scipy_enumeration():
    """With 2**n <= permutations both enumerate every sign pattern: the same p-value."""
    rng = np.random.default_rng(3)
    for n in (5, 9, 12):
        d = np.round(rng.normal(0.1, 0.3, n), 3)
        p, used, exact = sign_flip_p_value(d, 10_000, seed=0)
        assert exact and used == 2**n
        assert p == pytest.approx(_scipy_p(d, 10_000), abs=1e-12)


def test_monte_carlo_p_value_near_scipy():
    rng = np.random.default_rng(4)
    d = rng.normal(0.05, 0.3, 60)
    p, used, exact = sign_flip_p_value(d, 20_000, seed=1)
    assert not exact and used == 20_000
    reference = _scipy_p(d, 20_000)
    # two Monte Carlo estimates of the same p: within 4 standard errors
    assert abs(p - reference) < 4 * np.sqrt(reference * (1 - reference) / 20_000) + 1e-4


def test_finds_a_known_shift_on_a_random_half_of_the_rows():
    rng = np.random.default_rng(2026)
    a = rng.beta(5, 2, 400)
    shifted = rng.random(400) < 0.5
    b = a + np.where(shifted, 0.05, 0.0)
    result = paired_comparison(a, b, tolerance=0.01, resamples=2000, seed=0)
    expected = 0.05 * shifted.mean()
    assert result.mean_difference == pytest.approx(expected, abs=1e-12)
    assert result.difference.low > 0 and result.difference.contains(expected)
    assert result.p_value < 0.05
    assert result.b_wins == int(shifted.sum()) and result.a_wins == 0 and result.ties == 400 - shifted.sum()
    assert all(shifted[i] for i in result.b_better_rows) and result.a_better_rows == []


def test_identical_runs_show_no_difference():
    a = np.random.default_rng(1).random(300)
    result = paired_comparison(a, a.copy(), resamples=2000)
    assert result.mean_difference == 0 and result.difference is None  # no variation: no interval
    assert result.p_value > 0.05 and result.p_value == 1.0
    assert (result.b_wins, result.ties, result.a_wins) == (0, 300, 0)


def test_two_runs_of_equal_quality_are_not_told_apart():
    rng = np.random.default_rng(8)
    truth = rng.random(300)
    a = truth + rng.normal(0, 0.1, 300)
    b = truth + rng.normal(0, 0.1, 300)
    result = paired_comparison(a, b, resamples=2000, seed=3)
    assert result.difference.contains(0.0) and result.p_value > 0.05


def test_counts_and_rows_by_hand():
    a = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    b = np.array([0.9, 0.52, 0.1, 0.5, 0.7, 0.45])
    result = paired_comparison(a, b, tolerance=0.03, resamples=1000, top=2)
    assert (result.b_wins, result.ties, result.a_wins) == (2, 2, 2)
    assert result.b_better_rows == [0, 4] and result.a_better_rows == [2, 5]
    assert result.mean_a == 0.5 and result.mean_b == pytest.approx(b.mean())
    data = result.as_dict()
    assert data["test"] == "paired sign-flip permutation test, two-sided" and data["exact"] is True
    # 6 rows: below the 10 an interval needs (its coverage), the exact test still answers
    assert data["difference_interval"] is None and data["no_interval"]["difference"] == "fewer than 10 rows"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"a": [1.0, 2.0], "b": [1.0]}, "must score the same rows; got 2 and 1"),
        ({"a": [1.0, float("inf")], "b": [1.0, 2.0]}, r"a\[1\] is inf"),
        ({"a": [1.0], "b": [1.0], "tolerance": -1}, "tolerance must be a finite number >= 0"),
        ({"a": [1.0], "b": [1.0], "top": -1}, "top must be a whole number"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        paired_comparison(**kwargs)
