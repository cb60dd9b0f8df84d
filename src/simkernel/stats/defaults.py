"""The statistics' defaults, apart from numpy so that the command line's parser can name them cheaply."""

from __future__ import annotations

DEFAULT_RESAMPLES = 10_000  # bootstrap resamples of every interval
# the fewest bootstrap resamples of an interval (0 turns the bootstrap off): a 95% interval's ends are
# its resamples' 2.5% tails, which fewer leave to chance (Efron & Tibshirani 1993 ask 1,000 or more for
# percentile and BCa intervals); also the fewest random sign patterns of compare's test by default
MIN_RESAMPLES = 1_000
DEFAULT_BOOTSTRAP = MIN_RESAMPLES  # calibrate's resamples of the threshold's percentile interval
DEFAULT_SEED = 0
DEFAULT_LEVEL = 0.95  # 95% intervals


def resamples_problem(value: object) -> str | None:
    """Why ``value`` cannot be a number of bootstrap resamples (``must be ...``, to follow the option's or
    argument's name), or None: it must be 0 (no bootstrap) or a whole number of at least
    :data:`MIN_RESAMPLES`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or 0 < value < MIN_RESAMPLES:
        return f"must be 0 (no bootstrap interval) or at least {MIN_RESAMPLES:,} (a 95% interval's ends are the resamples' 2.5% tails: fewer leave them to chance), got {value!r}"
    return None
