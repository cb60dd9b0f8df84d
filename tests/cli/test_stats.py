"""Pearson and Spearman of the summary against scipy.stats (the independent reference)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from simkernel.batch.stats import average_ranks, pearson, spearman

labels = st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=3, max_size=60)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), y=labels)
def test_matches_scipy_with_ties(data, y):
    x = data.draw(st.lists(st.floats(-1.0, 1.0, allow_nan=False, width=32), min_size=len(y), max_size=len(y)))
    expected_r = scipy.stats.pearsonr(x, y).statistic if np.ptp(x) > 0 and np.ptp(y) > 0 else math.nan
    expected_rho = scipy.stats.spearmanr(x, y).statistic if np.ptp(x) > 0 and np.ptp(y) > 0 else math.nan
    for got, want in ((pearson(x, y), expected_r), (spearman(x, y), expected_rho)):
        if math.isnan(want):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(want, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-5, 5).map(float), min_size=1, max_size=50))
def test_average_ranks_match_rankdata(values):
    np.testing.assert_array_equal(average_ranks(values), scipy.stats.rankdata(values, method="average"))


def test_known_values():
    # perfectly monotone but not linear: Spearman 1, Pearson below 1
    x = [1.0, 2.0, 3.0, 4.0]
    y = [1.0, 4.0, 9.0, 100.0]
    assert spearman(x, y) == pytest.approx(1.0)
    assert pearson(x, y) == pytest.approx(scipy.stats.pearsonr(x, y).statistic, abs=1e-12)
    assert pearson(x, y) < 0.9
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_tiny_and_huge_scales_do_not_overflow():
    x = np.array([1e-200, 2e-200, 3e-200, 5e-200])
    y = np.array([1e200, 3e200, 2e200, 4e200])
    assert pearson(x, y) == pytest.approx(scipy.stats.pearsonr(x / 1e-200, y / 1e200).statistic, abs=1e-12)


def test_undefined_cases_give_nan():
    assert math.isnan(pearson([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]))
    assert math.isnan(spearman([0.5, 0.5], [0.0, 2.0]))
    assert math.isnan(pearson([1.0], [2.0]))
    assert math.isnan(spearman([0.1, math.nan, 0.3], [0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="one length"):
        pearson([1.0, 2.0], [1.0, 2.0, 3.0])
