"""The statistics' defaults, apart from numpy so that the command line's parser can name them cheaply."""

from __future__ import annotations

DEFAULT_RESAMPLES = 10_000  # bootstrap resamples of every interval
DEFAULT_SEED = 0
DEFAULT_LEVEL = 0.95  # 95% intervals
