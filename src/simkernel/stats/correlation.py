"""Correlation of scores with human labels, in numpy float64 (no scipy at run time).

Both functions match ``scipy.stats.pearsonr(x, y).statistic`` and ``scipy.stats.spearmanr(x, y).statistic``
to float64 rounding: Spearman is Pearson on average ranks (tied values share the mean of the ranks they
span). A constant input has no correlation and gives NaN, as scipy does (without its warning).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pearson(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Pearson's r of two equal-length samples (float64); NaN when fewer than 2 values, a NaN value, or
    either sample is constant."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"pearson needs two 1-d samples of one length, got shapes {a.shape} and {b.shape}")
    if a.size < 2 or np.isnan(a).any() or np.isnan(b).any():
        return float("nan")
    a = a - a.mean()
    b = b - b.mean()
    # scale first so that the sums of squares cannot overflow or underflow
    a_scale = np.abs(a).max()
    b_scale = np.abs(b).max()
    if a_scale == 0 or b_scale == 0:
        return float("nan")
    a = a / a_scale
    b = b / b_scale
    r = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
    return max(-1.0, min(1.0, r))


def average_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks of ``values`` (float64); ties get the average of the ranks they span, like
    ``scipy.stats.rankdata(values, method="average")``; all NaN if any value is NaN."""
    v = np.asarray(values, dtype=np.float64)
    if np.isnan(v).any():  # scipy's default nan_policy="propagate"
        return np.full(v.size, np.nan)
    order = np.argsort(v, kind="mergesort")
    sorted_values = v[order]
    # start index of each run of equal values in sorted order
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], v.size]
    run_rank = (starts + ends + 1) / 2.0  # mean of the 1-based ranks starts+1 .. ends
    ranks = np.empty(v.size, dtype=np.float64)
    ranks[order] = np.repeat(run_rank, ends - starts)
    return ranks


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the average ranks; NaN when either sample is constant."""
    return pearson(average_ranks(x), average_ranks(y))
