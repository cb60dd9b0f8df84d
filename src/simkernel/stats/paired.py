"""Two systems scored on the same rows: is B better than A, by how much, and where do they differ?

:func:`paired_comparison` takes the two score columns row by row (``a[i]`` and ``b[i]`` score the same
question) and works on the paired differences ``d = b - a`` in float64:

- **each mean** with its own interval (:func:`~simkernel.stats.intervals.mean_interval`);
- **the mean difference** ``mean(d)`` (= mean(b) - mean(a)) with its BCa bootstrap interval over rows
  (:func:`~simkernel.stats.intervals.bootstrap_intervals`: the rows, not the two columns apart, are
  resampled, so the interval keeps the pairing);
- **a paired sign-flip permutation test** (two-sided) of "A and B are exchangeable on every row": under
  that null each ``d[i]`` is as likely to be ``-d[i]``, so the observed ``|sum(d)|`` is compared with
  ``|sum(s * d)|`` for random signs ``s`` (each +1 or -1 with probability 1/2, drawn from
  ``numpy.random.default_rng([seed, 1])``, ``permutations`` of them, all at once as a matrix product).
  ``p = (1 + #{|sum(s d)| >= |sum(d)|}) / (1 + permutations)`` (Phipson & Smyth 2010: never 0, and a
  valid p-value at any number of permutations); with ``2**n <= permutations`` every one of the ``2**n``
  sign patterns is enumerated and ``p`` is exact. Why this test rather than a paired bootstrap test: it is
  exact in finite samples under its null, needs no assumption about the scores' distribution and no
  choice of how to centre a bootstrap distribution on the null (a bootstrap p-value is only
  asymptotically valid and is often anti-conservative on small samples); the interval above still says
  how large the difference is.
- **wins, ties and losses** at ``tolerance``: a row is a win for B when ``d > tolerance``, a loss when
  ``d < -tolerance``, a tie otherwise;
- **the rows that differ most**, both ways: the ``top`` rows of largest ``d`` (B better) and of smallest
  ``d`` (A better), by index.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simkernel.stats.intervals import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MIN_RESAMPLES,
    Interval,
    bootstrap_intervals,
    mean_interval,
)

__all__ = ["TEST_NAME", "PairedComparison", "paired_comparison", "sign_flip_p_value"]

TEST_NAME = "paired sign-flip permutation test, two-sided"
_CHUNK_CELLS = 1 << 16


@dataclass(frozen=True)
class PairedComparison:
    """The result of :func:`paired_comparison` (``as_dict()`` is its JSON form).

    ``n`` rows; ``mean_a``, ``mean_b`` with their intervals ``mean_a_interval``, ``mean_b_interval``
    (:func:`~simkernel.stats.intervals.mean_interval`: each run's own, marginal; the difference's is the
    one that compares them); ``difference``: the mean of ``b - a`` with its interval (None
    with fewer than 10 rows (``MIN_ROWS``), ``resamples=0`` or a ``b - a`` that is the same on every row: then only
    ``mean_difference``, and ``no_interval["difference"]`` says why); ``p_value`` of the
    ``test`` with ``permutations`` sign patterns (``exact``: all of them); ``b_wins`` / ``ties`` /
    ``a_wins`` at ``tolerance``; ``b_better_rows`` / ``a_better_rows``: the indices of the rows where B
    (resp. A) is ahead by most, largest gap first; ``differences``: ``b - a`` per row (float64).
    """

    n: int
    mean_a: float
    mean_b: float
    mean_difference: float
    difference: Interval | None
    p_value: float
    permutations: int
    exact: bool
    b_wins: int
    ties: int
    a_wins: int
    tolerance: float
    b_better_rows: list[int]
    a_better_rows: list[int]
    differences: np.ndarray = field(repr=False, compare=False)
    test: str = TEST_NAME
    no_interval: dict[str, str] = field(default_factory=dict)
    mean_a_interval: Interval | None = None
    mean_b_interval: Interval | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "mean_a_interval": self.mean_a_interval.as_dict() if self.mean_a_interval is not None else None,
            "mean_b_interval": self.mean_b_interval.as_dict() if self.mean_b_interval is not None else None,
            "mean_difference": self.mean_difference,
            "difference_interval": self.difference.as_dict() if self.difference is not None else None,
            "no_interval": dict(self.no_interval),
            "test": self.test,
            "p_value": self.p_value,
            "permutations": self.permutations,
            "exact": self.exact,
            "tolerance": self.tolerance,
            "b_wins": self.b_wins,
            "ties": self.ties,
            "a_wins": self.a_wins,
            "b_better_rows": self.b_better_rows,
            "a_better_rows": self.a_better_rows,
        }


def sign_flip_p_value(differences: np.ndarray, permutations: int, seed: int) -> tuple[float, int, bool]:
    """The two-sided p-value of the paired sign-flip permutation test of ``differences`` (see the module's
    docstring): ``(p, sign patterns used, exact)``."""
    d = np.asarray(differences, dtype=np.float64)
    n = d.size
    observed = abs(float(d.sum()))
    # a flipped sum equal to the observed one up to rounding counts as "as extreme" (as scipy does)
    slack = observed * 100 * np.finfo(np.float64).eps
    if n == 0:
        return 1.0, 0, True
    if n <= 20 and 2**n <= permutations:
        patterns = ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1) * 2.0 - 1.0
        extreme = int(np.count_nonzero(np.abs(patterns @ d) >= observed - slack))
        return extreme / 2**n, 2**n, True
    rng = np.random.default_rng([seed, 1])
    chunk = max(1, _CHUNK_CELLS // n)
    extreme = done = 0
    while done < permutations:
        size = min(chunk, permutations - done)
        signs = rng.integers(0, 2, size=(size, n)).astype(np.float64) * 2.0 - 1.0
        extreme += int(np.count_nonzero(np.abs(signs @ d) >= observed - slack))
        done += size
    return (1 + extreme) / (1 + permutations), permutations, False


def paired_comparison(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    tolerance: float = 0.0,
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int | None = None,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
    top: int = 5,
) -> PairedComparison:
    """Compare system B with system A on the same rows (``a[i]`` and ``b[i]`` are the two scores of row
    ``i``); positive differences mean B scores higher.

    :param tolerance: ``|b - a| <= tolerance`` is a tie (default 0: only equal scores tie).
    :param resamples: bootstrap resamples of the difference's interval (default 10,000; 0: none; else at
        least 1,000).
    :param permutations: random sign patterns of the test (default: ``resamples``, at least 1,000).
    :param seed: seed of both (the test draws from ``default_rng([seed, 1])``).
    :param top: how many rows to list each way.
    :raises ValueError: lengths differ, a value that is not finite, a negative tolerance or top.
    """
    x = _finite(a, "a")
    y = _finite(b, "b")
    if x.size != y.size:
        raise ValueError(f"a and b must score the same rows; got {x.size} and {y.size} scores")
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise ValueError(f"top must be a whole number >= 0, got {top!r}")
    if permutations is None:
        permutations = max(resamples, MIN_RESAMPLES)
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 1:
        raise ValueError(f"permutations must be a whole number >= 1, got {permutations!r}")
    d = y - x
    n = int(d.size)
    found = bootstrap_intervals(d, statistics=("mean",), resamples=resamples, seed=seed, level=level)
    interval = found["mean"]
    sides = [mean_interval(v, resamples=resamples, seed=seed, level=level) for v in (x, y)]
    no_interval = {"difference": found.reasons["mean"]} if interval is None else {}
    for name, side in zip(("mean_a", "mean_b"), sides, strict=True):
        if side["mean"] is None:
            no_interval[name] = side.reasons["mean"]
    p, used, exact = sign_flip_p_value(d, permutations, seed)
    order = np.argsort(-d, kind="stable")
    b_better = [int(i) for i in order[:top] if d[i] > tolerance]
    a_better = [int(i) for i in order[::-1][:top] if d[i] < -tolerance]
    return PairedComparison(
        n=n,
        mean_a=float(x.mean()) if n else math.nan,
        mean_b=float(y.mean()) if n else math.nan,
        mean_difference=float(d.mean()) if n else math.nan,
        difference=interval,
        p_value=p,
        permutations=used,
        exact=exact,
        b_wins=int(np.count_nonzero(d > tolerance)),
        ties=int(np.count_nonzero(np.abs(d) <= tolerance)),
        a_wins=int(np.count_nonzero(d < -tolerance)),
        tolerance=float(tolerance),
        b_better_rows=b_better,
        a_better_rows=a_better,
        differences=d,
        no_interval=no_interval,
        mean_a_interval=sides[0]["mean"],
        mean_b_interval=sides[1]["mean"],
    )


def _finite(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of scores, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] is {float(array[bad[0]])!r}, not a finite score")
    return array
