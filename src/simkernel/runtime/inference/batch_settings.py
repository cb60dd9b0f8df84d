"""The settings of the encoders' batcher (:mod:`simkernel.runtime.inference.batcher`): on or off, tokens per
shared pass, calls that may wait; each from the constructor, else the environment, else the default.

The default ``max_batch_tokens`` (4,096 tokens, about 0.3 s of all-MiniLM-L6-v2 on two cores) bounds what
a newcomer waits behind a large call; a pass of that size still holds full batches of each length, since
a large call is cut in token-length order (benchmarks/bench_latency.py).
"""

from __future__ import annotations

import os

import numpy as np

DEFAULT_MAX_BATCH_TOKENS = 4096
DEFAULT_MAX_QUEUE = 1024
BATCHING_ENV = "SIMKERNEL_BATCHING"
MAX_BATCH_TOKENS_ENV = "SIMKERNEL_MAX_BATCH_TOKENS"
MAX_QUEUE_ENV = "SIMKERNEL_MAX_QUEUE"


def batching_default() -> bool:
    """Whether encoders batch concurrent calls when not told: ``$SIMKERNEL_BATCHING`` (``0``/``false``/
    ``off``/``no`` turn it off), else on."""
    value = os.environ.get(BATCHING_ENV, "1").strip().lower()
    if value in ("0", "false", "off", "no"):
        return False
    if value in ("1", "true", "on", "yes", ""):
        return True
    raise ValueError(f"{BATCHING_ENV}={value!r} is not a switch; set it to 1 (batch concurrent calls) or 0")


def _setting(value: int | None, env: str, default: int, what: str) -> int:
    """A positive int from ``value``, else from the environment variable ``env``, else ``default``."""
    if value is None:
        raw = os.environ.get(env)
        if raw is None or not raw.strip():
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(
                f"{env}={raw!r} is not an integer; set it to a positive number of {what}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{what.replace(' ', '_')} must be a positive int, got {value!r}")
    return int(value)


def batch_settings(max_batch_tokens: int | None, max_queue: int | None) -> tuple[int, int]:
    """(max_batch_tokens, max_queue): the values given, else ``$SIMKERNEL_MAX_BATCH_TOKENS`` /
    ``$SIMKERNEL_MAX_QUEUE``, else the defaults (4,096 tokens, 1,024 calls); anything but a positive int
    raises ValueError."""
    tokens = _setting(max_batch_tokens, MAX_BATCH_TOKENS_ENV, DEFAULT_MAX_BATCH_TOKENS, "max batch tokens")
    queue = _setting(max_queue, MAX_QUEUE_ENV, DEFAULT_MAX_QUEUE, "max queue")
    return tokens, queue
