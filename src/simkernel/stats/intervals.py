"""Confidence intervals of evaluation figures, in float64 (numpy, and a C kernel for the bootstrap's sums).

**Bootstrap (the mean, Pearson's r, Spearman's rho).** The rows are resampled with replacement
``resamples`` times (default 10,000; 0 or at least :data:`MIN_RESAMPLES`, 1,000), drawn in turn from ``numpy.random.default_rng(seed)``
(:func:`resample_counts`: the classic multinomial resamples up to 1,000 rows, the Poisson bootstrap's
independent Poisson(1) row counts above, several times faster to draw), so an interval depends on
``(data, resamples, seed)`` only (the rows are taken in the order of ``x``'s values). For each resample, a
row of counts, the native kernel (``simkernel._bootstrap``, csrc/bootstrap.h) writes in one pass over the
rows the sums its statistics need: the rows drawn ``N``, the weighted moments of the values centred on the
sample's means (the mean, Pearson's r), and the rank sums of Spearman's rho as Pearson's r of the
resample's own average ranks (ties share the mean of the ranks they span, as in
:func:`~simkernel.stats.correlation.spearman`), from cumulative counts over the distinct values, without
sorting any resample, in exact integer arithmetic (:class:`_Sample`). The sums keep one order whatever the
CPU, so the intervals do not depend on the machine. Chunks of a few hundred resamples keep the work in
cache and the memory at a few MiB whatever ``resamples`` is. The mean, r and rho of one call share the
same resamples.

The interval is the **BCa** (bias-corrected and accelerated) percentile interval (Efron 1987; Efron &
Tibshirani 1993, ch. 14; what ``scipy.stats.bootstrap(method="BCa")`` computes): with the estimate
``t``, the bias correction ``z0 = Phi^-1((#{t* < t} + #{t* == t} / 2) / B)`` and the acceleration
``a = sum(d^3) / (6 (sum(d^2))^1.5)`` over the jackknife deviations ``d = mean(t_(i)) - t_(i)``, the ends
are the ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` quantiles (numpy's linear interpolation) of the ``B``
bootstrap values, ``z`` the normal quantiles of the level's tails. BCa rather than the plain percentile
interval: it corrects the skew and bias of a correlation's sampling distribution (r near +-1, small
samples), where the percentile interval covers noticeably less than 95%; for a mean both agree. The
jackknife leaves out one row at a time up to 1,000 rows; above that, one of 1,000 groups of rows (a seeded
random split; the grouped jackknife estimates the same acceleration at a fixed cost).

A resample whose correlation is undefined (every value drawn equal) is left out of that statistic's
bootstrap distribution. The interval is None, and :class:`Intervals` ``.reasons`` says why, when the
sample has fewer than :data:`MIN_ROWS` rows (10: below it the coverage of a "95%" interval falls to 88% at 8
rows and 71% at 3; benchmarks/interval_coverage.py), the estimate itself is undefined (a constant column), the
values do not vary (the mean of a constant column: every resample gives the same mean, and a zero-width
"interval" would claim a certainty the sample cannot give), more than half of the resamples have no
correlation, or the bootstrap values do not vary (r = 1 in every resample); so an interval, where there is
one, has a width and holds its estimate's neighbourhood.

**Wilson's score interval** of a rate (:func:`wilson`), closed form: ``(p + z^2/2n +- z sqrt(p(1-p)/n +
z^2/4n^2)) / (1 + z^2/n)``; unlike the normal approximation it stays inside [0, 1] and keeps its coverage
near 0% and 100%; its ends are exactly 0 at 0 of n and 1 at n of n.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from simkernel import _bootstrap
from simkernel.cpu_budget import available_cpus
from simkernel.stats.correlation import pearson, spearman
from simkernel.stats.defaults import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MIN_RESAMPLES,
    resamples_problem,
)

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "MIN_RESAMPLES",
    "Interval",
    "Intervals",
    "bca_interval",
    "bootstrap_intervals",
    "is_proportion",
    "mean_interval",
    "paired_difference_intervals",
    "resample_counts",
    "wilson",
]

STATISTICS = ("mean", "pearson", "spearman")
BOOTSTRAP_METHOD = "BCa bootstrap"
WILSON_METHOD = "Wilson score"
# the fewest rows of a bootstrap interval: below it a "95%" interval covers far less (the mean of normal
# data: 88% at 8 rows, 71% at 3; Pearson's r 60% at 3 rows), so none is given. 10 is the smallest sample
# at which each interval covers at least 90% on normal data (the mean 90.2%, Pearson 94.1%, Spearman
# 96.4%): benchmarks/interval_coverage.py, whose table docs/statistics.md publishes.
MIN_ROWS = 10
JACKKNIFE_GROUPS = 1000  # leave-one-out up to this many rows; grouped above
POISSON_ROWS = 1000  # multinomial resamples up to this many rows; Poisson counts above
_THREADED_CELLS = 1 << 22  # resamples x rows from which the statistics run on several threads
_MAX_THREADS = 8
_CHUNK_CELLS = 1 << 16  # resample x row cells per chunk (128 KiB of uint16 counts: in cache)


@dataclass(frozen=True)
class Interval:
    """A figure with its confidence interval: ``estimate`` (on all the rows), ``low`` and ``high`` at
    ``level`` (0.95: a 95% interval), ``method`` ("BCa bootstrap" or "Wilson score"), and for a bootstrap
    the ``resamples`` and ``seed`` it ran with."""

    estimate: float
    low: float
    high: float
    level: float
    method: str
    resamples: int | None = None
    seed: int | None = None

    def as_dict(self) -> dict[str, float | int | str | None]:
        """JSON-ready: estimate, low, high, level, method (and resamples, seed for a bootstrap)."""
        data: dict[str, float | int | str | None] = {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "method": self.method,
        }
        if self.resamples is not None:
            data["resamples"] = self.resamples
            data["seed"] = self.seed
        return data

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def text(self, digits: int = 4) -> str:
        """``95% CI 0.7012 to 0.7398``."""
        return f"{self.level:.0%} CI {self.low:.{digits}f} to {self.high:.{digits}f}"


class Intervals(dict[str, "Interval | None"]):
    """What :func:`bootstrap_intervals` returns: figure name -> :class:`Interval`, or None where the figure
    has no interval; ``reasons`` says why for each None (e.g. ``"no variation: every value is the same"``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reasons: dict[str, str] = {}

    def none(self, name: str, reason: str) -> None:
        self[name] = None
        self.reasons[name] = reason


# why a figure has no interval (Intervals.reasons)
NO_BOOTSTRAP = "no bootstrap (0 resamples)"
NO_VARIATION = "no variation: every value is the same"
NO_CORRELATION = "no correlation: constant scores or labels"
FLAT_RESAMPLES = "no variation among the resamples"
FEW_DISTINCT = "too few distinct values: most resamples have no correlation"


def wilson(successes: int, n: int, level: float = DEFAULT_LEVEL) -> Interval | None:
    """Wilson's score interval of the rate ``successes / n`` (float64, closed form; exactly 0 at 0 of n
    and 1 at n of n); None when ``n`` is 0."""
    _check_level(level)
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"wilson needs 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return None
    z = NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denominator
    # the ends at 0 of n and n of n are 0 and 1 exactly (the formula gives them up to rounding)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(p, low, high, level, WILSON_METHOD)


def resample_counts(n: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The bootstrap resamples of ``n`` rows as row counts, in chunks: uint16 arrays (chunk x n), row
    ``k`` holding how often each row was drawn into resample ``k``; ``resamples`` rows in all, drawn in
    turn from ``numpy.random.default_rng(seed)``.

    Up to :data:`POISSON_ROWS` rows, each resample is ``n`` draws with replacement (``integers(0, n, n)``,
    the classic multinomial bootstrap). Above that, each row's count is drawn on its own as Poisson(1)
    (the Poisson bootstrap: Hanley & MacGibbon 2006, Chamandy et al. 2012), the limit of the multinomial
    counts' Binomial(n, 1/n) as ``n`` grows, and several times faster to draw: the inverse of Poisson(1)'s
    distribution function applied to 16-bit uniforms of the generator's raw output (each count's
    probability within 2**-16 of Poisson(1)'s; counts above 8, of probability 1e-6, are not drawn). A
    resample then holds about ``n`` rows (``n +- sqrt(n)``), and every statistic is computed on the rows it
    holds."""
    rng = np.random.default_rng(seed)
    chunk = max(1, min(resamples, _CHUNK_CELLS // max(n, 1)))
    done = 0
    while done < resamples:
        size = min(chunk, resamples - done)
        if n > POISSON_ROWS:
            cells = size * n
            uniform = rng.bit_generator.random_raw((cells + 3) // 4).view(np.uint16)[:cells]
            counts = np.empty(cells, dtype=np.uint16)
            _bootstrap.poisson_counts(uniform, _POISSON_EDGES, counts)
            yield counts.reshape(size, n)
        else:
            rows = rng.integers(0, n, size=(size, n))
            rows += (np.arange(size, dtype=rows.dtype) * n)[:, None]
            drawn = np.bincount(rows.ravel(), minlength=size * n)  # each at most n <= POISSON_ROWS
            yield drawn.reshape(size, n).astype(np.uint16)
        done += size


def _poisson_edges(top: int = _bootstrap.POISSON_EDGES) -> np.ndarray:
    """The 16-bit edges of Poisson(1)'s counts: a uniform ``u`` in [0, 2**16) gives the count
    ``#{k : u >= edge[k]}``, ``edge[k] = round(2**16 * P(X <= k))`` for k = 0 .. top - 1."""
    cdf = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(top)])
    return np.round(cdf * 65536).astype(np.uint16)


_POISSON_EDGES = _poisson_edges()


def _jackknife_weights(n: int, seed: int) -> Iterator[np.ndarray]:
    """Leave-one-out weights (0 for the row left out, 1 elsewhere), or leave-one-group-out weights for
    more than :data:`JACKKNIFE_GROUPS` rows (a seeded random split into that many near-equal groups)."""
    if n <= JACKKNIFE_GROUPS:
        groups = np.arange(n)
        count = n
    else:
        groups = np.random.default_rng([seed, 1]).permutation(n) % JACKKNIFE_GROUPS
        count = JACKKNIFE_GROUPS
    chunk = max(1, _CHUNK_CELLS // n)
    for start in range(0, count, chunk):
        ids = np.arange(start, min(count, start + chunk))
        yield (groups[None, :] != ids[:, None]).astype(np.uint16)


class _Sample:
    """One sample's rows, sorted by ``x``, and its statistics on any chunk of row counts (bootstrap
    resamples or jackknife 0/1 weights, one row of counts per resample, a count per sorted row: the
    statistics do not depend on the rows' order, so the counts are drawn for the sorted rows), from the sums
    of the native kernel (csrc/bootstrap.h: one pass over the rows per resample).

    - The mean: ``sum w x / N`` (``N``: the rows drawn).
    - Pearson's r from the weighted moments of the values centred on the sample's means.
    - Spearman's rho as Pearson's r of each resample's own average ranks: a distinct value ``v`` drawn
      ``c_v`` times has the rank ``below_v + (c_v + 1) / 2`` (``below_v``: the rows drawn with a smaller
      value), centred on ``(N + 1) / 2``; the kernel sums them in exact integer arithmetic, the squares by
      the tie-corrected closed form ``((N^3 - N) - sum (t^3 - t)) / 12``.

    The kernel's sums keep one order whatever the CPU, so an interval does not depend on the machine.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray | None, wanted: Sequence[str]) -> None:
        self.wanted = list(wanted)
        order = np.argsort(x, kind="stable")
        self.order = order  # sorted position -> row: a row of counts of the rows in their own order is
        # counts[:, order] for this sample
        x = x[order]
        self.rows = x.size
        columns = [x]
        x_run_starts = y_order = y_group_starts = None
        if y is not None:
            y = y[order]
            if "pearson" in self.wanted:
                xc, yc = x - x.mean(), y - y.mean()
                columns += [xc, yc, xc * xc, yc * yc, xc * yc]
                self.x_scale = float(np.abs(xc).max()) ** 2
                self.y_scale = float(np.abs(yc).max()) ** 2
            if "spearman" in self.wanted:
                x_run_starts = _run_starts(x)
                y_order = np.argsort(y, kind="stable")
                y_group_starts = _run_starts(y[y_order])
                if y_group_starts is None:  # every y distinct: a group per row
                    y_group_starts = np.arange(x.size + 1, dtype=np.intp)
        self._kernel = _bootstrap.Sample(np.stack(columns), x_run_starts, y_order, y_group_starts)

    def sums(self, counts: np.ndarray) -> np.ndarray:
        """The kernel's sums of each resample of ``counts`` (resamples x rows, uint16): resamples x
        ``_bootstrap.SUMS`` float64."""
        sums = np.empty((counts.shape[0], _bootstrap.SUMS))
        self._kernel.sums(counts, sums)
        return sums

    def statistics(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        """The wanted statistics of each resample, from its :meth:`sums`."""
        total = sums[:, 0]
        out: dict[str, np.ndarray] = {}
        if "mean" in self.wanted:
            out["mean"] = sums[:, 1] / total
        if "pearson" in self.wanted:
            m = sums[:, 2:7] / total[:, None]
            vx = m[:, 2] - m[:, 0] ** 2
            vy = m[:, 3] - m[:, 1] ** 2
            out["pearson"] = _correlation(m[:, 4] - m[:, 0] * m[:, 1], vx, vy, self.x_scale, self.y_scale)
        if "spearman" in self.wanted:
            scale = float(self.rows) ** 2
            out["spearman"] = _correlation(sums[:, 7], sums[:, 8], sums[:, 9], scale, scale)
        return out


def _run_starts(ordered: np.ndarray) -> np.ndarray | None:
    """For sorted values: the start of each run of equal values and then their count (intp), or None when
    every value is distinct."""
    new = np.r_[True, ordered[1:] != ordered[:-1]]
    if new.all():
        return None
    return np.r_[np.flatnonzero(new), ordered.size].astype(np.intp)


def _correlation(cov, vx, vy, x_scale: float, y_scale: float) -> np.ndarray:
    # a variance at rounding level of the values' scale is a constant resample: no correlation (NaN)
    flat = (vx <= 1e-12 * x_scale) | (vy <= 1e-12 * y_scale)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov / np.sqrt(vx * vy)
    r = np.clip(r, -1.0, 1.0)
    r[flat] = np.nan
    return r


def bca_interval(
    estimate: float, boot: np.ndarray, jackknife: np.ndarray, level: float = DEFAULT_LEVEL
) -> tuple[float, float]:
    """The BCa interval ``(low, high)`` of ``estimate`` from its bootstrap values ``boot`` and its
    jackknife values ``jackknife`` (both 1-d float64, finite); see the module's docstring for the
    formulas. The bias correction's proportion is kept within ``[1/2B, 1 - 1/2B]``."""
    b = boot.size
    below = (np.count_nonzero(boot < estimate) + 0.5 * np.count_nonzero(boot == estimate)) / b
    below = min(max(below, 0.5 / b), 1.0 - 0.5 / b)
    normal = NormalDist()
    z0 = normal.inv_cdf(below)
    d = jackknife.mean() - jackknife
    spread = float(np.sum(d * d))
    a = float(np.sum(d * d * d)) / (6.0 * spread**1.5) if spread > 0 else 0.0
    ends = []
    for tail in ((1.0 - level) / 2.0, (1.0 + level) / 2.0):
        z = z0 + normal.inv_cdf(tail)
        ends.append(normal.cdf(z0 + z / (1.0 - a * z)))
    low, high = np.percentile(boot, [100.0 * ends[0], 100.0 * ends[1]])
    return float(low), float(high)


def bootstrap_intervals(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray | None = None,
    *,
    statistics: Sequence[str] = STATISTICS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> Intervals:
    """BCa bootstrap intervals over rows of the mean of ``x`` and, with ``y`` (e.g. human labels, one per
    row), Pearson's r and Spearman's rho of ``x`` and ``y``; all from the same seeded resamples.

    :param statistics: which of ``"mean"``, ``"pearson"``, ``"spearman"`` (the correlations need ``y``).
    :param resamples: bootstrap resamples (default 10,000; at least :data:`MIN_RESAMPLES`, 1,000); 0 gives
        no intervals (every value None).
    :returns: :class:`Intervals`, name -> :class:`Interval` (its ``estimate`` is the figure on all the
        rows, equal to :func:`~simkernel.stats.correlation.pearson` / ``spearman`` / the float64 mean), or
        None where no interval exists, and why in ``.reasons`` (see the module's docstring).
    :raises ValueError: a value that is not finite, lengths that differ, an unknown statistic, a bad level,
        ``resamples`` between 1 and 999.
    """
    wanted = _checked_arguments(statistics, resamples, level)
    if y is None and any(name != "mean" for name in wanted):
        raise ValueError(
            "pearson and spearman need y, the values to correlate x with; pass y= or ask for mean only"
        )
    xs = _finite(x, "x")
    ys = _finite(y, "y") if y is not None else None
    if ys is not None and ys.size != xs.size:
        raise ValueError(f"x and y must have one value per row; got {xs.size} and {ys.size}")
    estimates = {name: _estimate(name, xs, ys) for name in wanted}
    reasons = {name: _no_interval(name, xs, estimates[name], resamples) for name in wanted}
    return _bca_intervals(
        lambda todo: _Sample(xs, ys, todo), estimates, reasons, xs.size, resamples, seed, level
    )


def _checked_arguments(statistics: Sequence[str], resamples: int, level: float) -> list[str]:
    """Check ``statistics``, ``resamples`` and ``level`` (ValueError naming the problem); returns the
    statistics asked for, each once."""
    wanted = list(dict.fromkeys(statistics))
    unknown = [name for name in wanted if name not in STATISTICS]
    if unknown:
        raise ValueError(f"unknown statistic {unknown[0]!r}; choose from {', '.join(STATISTICS)}")
    problem = resamples_problem(resamples)
    if problem:
        raise ValueError(f"resamples {problem}")
    _check_level(level)
    return wanted


def _bca_intervals(
    sampler: Callable[[list[str]], _Sample | _Pair],
    estimates: dict[str, float],
    reasons: dict[str, str | None],
    rows: int,
    resamples: int,
    seed: int,
    level: float,
) -> Intervals:
    """The intervals of the figures of ``estimates``: None and its reason where ``reasons`` gives one,
    else the BCa interval from the bootstrap and jackknife statistics of ``sampler(the others)`` (a
    :class:`_Sample`, or a :class:`_Pair` of two samples) over ``rows`` rows."""
    result = Intervals(dict.fromkeys(estimates))
    todo = []
    for name, reason in reasons.items():
        if reason is not None:
            result.none(name, reason)
        else:
            todo.append(name)
    if not todo:
        return result
    sample = sampler(todo)
    samples = 2 if isinstance(sample, _Pair) else 1  # the kernel's cells: resamples x rows, per sample
    boot = _collect(sample, resample_counts(rows, resamples, seed), samples * resamples * rows)
    jack = _collect(sample, _jackknife_weights(rows, seed))
    for name in todo:
        _finish(result, name, estimates[name], boot[name], jack[name], resamples, seed, level)
    return result


def _no_interval(name: str, x: np.ndarray, estimate: float, resamples: int) -> str | None:
    """Why the figure ``name`` of the sample ``x`` gets no bootstrap interval, or None when it gets one."""
    if resamples == 0:
        return NO_BOOTSTRAP
    least = max(MIN_ROWS, 2 if name == "mean" else 3)  # a jackknife needs 2 rows, a correlation 3
    if x.size < least:
        return f"fewer than {least} rows"
    if name == "mean":
        return NO_VARIATION if x.min() == x.max() else None
    if not math.isfinite(estimate):
        return NO_CORRELATION
    return None


def _flat(values: np.ndarray) -> bool:
    """Every bootstrap value equal up to rounding (a few units in the last place of the largest)."""
    scale = float(np.abs(values).max())
    return float(values.max() - values.min()) <= 64 * np.finfo(np.float64).eps * scale


def mean_interval(
    values: Sequence[float] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> Intervals:
    """The interval of the mean of a score column, as the summaries give it (``"mean"`` in the result,
    and why where there is none in ``.reasons``):

    - every value 0 or 1 (exact match, a pass / fail metric): the mean is a proportion, and gets Wilson's
      interval (:func:`wilson`, at any number of rows and resamples), which keeps its coverage where the
      bootstrap's collapses (a column of 10 ones: the bootstrap's "1.0000 to 1.0000", Wilson's 0.7225 to 1;
      Bernoulli(0.95) and 30 rows: the bootstrap covers 77%);
    - otherwise the BCa bootstrap of :func:`bootstrap_intervals` (none for a constant column: no variation).
    """
    x = _finite(values, "values")
    if is_proportion(x):
        return Intervals(mean=wilson(int(np.count_nonzero(x)), int(x.size), level))
    return bootstrap_intervals(x, statistics=("mean",), resamples=resamples, seed=seed, level=level)


def is_proportion(values: np.ndarray) -> bool:
    """Whether ``values`` (float64, at least one) are all 0 or 1: their mean is a proportion, whose
    interval is Wilson's (:func:`mean_interval`)."""
    return bool(values.size) and bool(np.all((values == 0.0) | (values == 1.0)))


class _Pair:
    """Two samples of the same rows (system A's and B's scores, each against its labels): each chunk of
    counts, drawn for the rows in their own order, gives both samples' sums (each reads it in its own sorted
    order), and the statistics are B's minus A's, resample by resample."""

    def __init__(self, a: _Sample, b: _Sample) -> None:
        self.a, self.b = a, b

    def sums(self, counts: np.ndarray) -> np.ndarray:
        return np.hstack([s.sums(np.ascontiguousarray(counts[:, s.order])) for s in (self.a, self.b)])

    def statistics(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        width = _bootstrap.SUMS
        a, b = self.a.statistics(sums[:, :width]), self.b.statistics(sums[:, width:])
        return {name: b[name] - a[name] for name in a}


def paired_difference_intervals(
    x_a: Sequence[float] | np.ndarray,
    y_a: Sequence[float] | np.ndarray,
    x_b: Sequence[float] | np.ndarray,
    y_b: Sequence[float] | np.ndarray,
    *,
    statistics: Sequence[str] = ("pearson", "spearman"),
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> Intervals:
    """BCa intervals of the paired differences B - A of Pearson's r and Spearman's rho (and the mean):
    system A's scores ``x_a`` against its labels ``y_a`` and system B's ``x_b`` against ``y_b``, row ``i``
    of each the same question. Each resample draws the rows once and both systems' figures are computed on
    the rows it drew, so the interval keeps the pairing: the two correlations share most of their sampling
    error (the same questions, often the same labels), which two separate intervals ignore (two overlapping
    intervals are not a test that the correlations are alike). The estimate is ``figure(B) - figure(A)`` on
    all the rows; the interval is None, with the reason in ``.reasons``, as in :func:`bootstrap_intervals`
    (either figure undefined, too few rows, no variation among the resamples: e.g. A and B the same).

    :raises ValueError: lengths that differ, a value that is not finite, an unknown statistic, a bad level,
        ``resamples`` between 1 and 999.
    """
    wanted = _checked_arguments(statistics, resamples, level)
    xa, ya, xb, yb = (
        _finite(v, name) for v, name in ((x_a, "x_a"), (y_a, "y_a"), (x_b, "x_b"), (y_b, "y_b"))
    )
    if not xa.size == ya.size == xb.size == yb.size:
        raise ValueError(
            f"x_a, y_a, x_b and y_b must have one value per row; got {xa.size}, {ya.size}, {xb.size} and {yb.size}"
        )
    estimates: dict[str, float] = {}
    reasons: dict[str, str | None] = {}
    for name in wanted:
        ends = (_estimate(name, xa, ya), _estimate(name, xb, yb))
        estimates[name] = ends[1] - ends[0]
        # no interval where either run's figure has none (A's reason first)
        reasons[name] = _no_interval(name, xa, ends[0], resamples) or _no_interval(
            name, xb, ends[1], resamples
        )
    return _bca_intervals(
        lambda todo: _Pair(_Sample(xa, ya, todo), _Sample(xb, yb, todo)),
        estimates,
        reasons,
        xa.size,
        resamples,
        seed,
        level,
    )


def _finish(
    result: Intervals,
    name: str,
    estimate: float,
    values: np.ndarray,
    jk: np.ndarray,
    resamples: int,
    seed: int,
    level: float,
) -> None:
    """The BCa interval of ``name`` from its bootstrap and jackknife values into ``result``, or None and
    why: more than half of the resamples undefined, or no variation among them."""
    finite = values[np.isfinite(values)]
    jk = jk[np.isfinite(jk)]
    if finite.size * 2 < resamples or jk.size < 2:
        result.none(name, FEW_DISTINCT)
    elif _flat(finite):  # e.g. r = 1 in every resample: nothing to put an interval on
        result.none(name, FLAT_RESAMPLES)
    else:
        low, high = bca_interval(estimate, finite, jk, level)
        result[name] = Interval(estimate, low, high, level, BOOTSTRAP_METHOD, resamples, seed)


def _collect(sample: _Sample | _Pair, chunks: Iterator[np.ndarray], cells: int = 0) -> dict[str, np.ndarray]:
    """The statistics of every resample of the chunks of counts, in order. The chunks are drawn here, in
    turn, and their sums computed on up to :func:`~simkernel.cpu_budget.available_cpus` threads (the kernel
    runs without the GIL) when there are ``cells`` (resamples x rows) enough to gain from it; the
    statistics are then computed on all the sums at once."""
    workers = min(_MAX_THREADS, available_cpus()) if cells >= _THREADED_CELLS else 1
    if workers == 1:
        parts = [sample.sums(counts) for counts in chunks]
    else:
        parts = []
        with ThreadPoolExecutor(workers, thread_name_prefix="simkernel-bootstrap") as pool:
            pending: deque = deque()
            for counts in chunks:
                pending.append(pool.submit(sample.sums, counts))
                while len(pending) > 2 * workers:  # a few chunks in flight: the memory stays bounded
                    parts.append(pending.popleft().result())
            parts.extend(future.result() for future in pending)
    return sample.statistics(np.concatenate(parts))


def _estimate(name: str, x: np.ndarray, y: np.ndarray | None) -> float:
    if name == "mean":
        return float(x.mean()) if x.size else math.nan
    assert y is not None
    return pearson(x, y) if name == "pearson" else spearman(x, y)


def _finite(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(
            f"{name}[{bad[0]}] is {float(array[bad[0]])!r}, not a finite number; leave such rows out first"
        )
    return array


def _check_level(level: float) -> None:
    if not (isinstance(level, (int, float)) and 0.0 < level < 1.0):
        raise ValueError(f"level must be a number between 0 and 1 (0.95: a 95% interval), got {level!r}")
