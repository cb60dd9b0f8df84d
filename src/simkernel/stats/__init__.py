"""Statistics of evaluation runs, in float64 (no scipy at run time): the lowest layer, numpy and the
bootstrap's C kernel (``simkernel._bootstrap``).

- :mod:`~simkernel.stats.correlation`: :func:`pearson`, :func:`spearman` (scipy's figures, to rounding);
- :mod:`~simkernel.stats.intervals`: 95% intervals of the mean, Pearson's r and Spearman's rho by a
  seeded BCa bootstrap over rows (:func:`bootstrap_intervals`), Wilson's interval of a rate
  (:func:`wilson`), and the mean of a score column as the summaries give it (:func:`mean_interval`: Wilson's
  for 0 / 1 scores);
- :mod:`~simkernel.stats.paired`: two systems scored on the same rows, :func:`paired_comparison`: the mean
  paired difference with its BCa interval, a paired sign-flip permutation test, wins / ties / losses at a
  tolerance, and the rows where the two differ most.

``docs/statistics.md`` gives the methods and why. Names resolve lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simkernel._lazy import lazy_face

_LAZY = {
    "pearson": "simkernel.stats.correlation",
    "spearman": "simkernel.stats.correlation",
    "average_ranks": "simkernel.stats.correlation",
    "DEFAULT_LEVEL": "simkernel.stats.defaults",
    "DEFAULT_RESAMPLES": "simkernel.stats.defaults",
    "DEFAULT_SEED": "simkernel.stats.defaults",
    "MIN_RESAMPLES": "simkernel.stats.defaults",
    "Interval": "simkernel.stats.intervals",
    "bootstrap_intervals": "simkernel.stats.intervals",
    "mean_interval": "simkernel.stats.intervals",
    "paired_difference_intervals": "simkernel.stats.intervals",
    "Intervals": "simkernel.stats.intervals",
    "bca_interval": "simkernel.stats.intervals",
    "wilson": "simkernel.stats.intervals",
    "PairedComparison": "simkernel.stats.paired",
    "paired_comparison": "simkernel.stats.paired",
}

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "MIN_RESAMPLES",
    "Interval",
    "Intervals",
    "PairedComparison",
    "average_ranks",
    "bca_interval",
    "bootstrap_intervals",
    "mean_interval",
    "paired_comparison",
    "paired_difference_intervals",
    "pearson",
    "spearman",
    "wilson",
]

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.stats.correlation import average_ranks, pearson, spearman
    from simkernel.stats.defaults import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, MIN_RESAMPLES
    from simkernel.stats.intervals import (
        Interval,
        Intervals,
        bca_interval,
        bootstrap_intervals,
        mean_interval,
        paired_difference_intervals,
        wilson,
    )
    from simkernel.stats.paired import PairedComparison, paired_comparison


__getattr__, __dir__ = lazy_face(__name__, _LAZY, globals())
