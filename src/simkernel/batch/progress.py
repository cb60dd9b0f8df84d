"""A one-line progress bar on stderr for runs longer than a moment.

Shown only when stderr is a terminal and the user did not ask for ``--quiet``; it first appears after
``delay`` seconds (so quick runs print nothing), redraws at most every ``interval`` seconds, and erases
itself when done so the summary that follows starts on a clean line. The environment variable
``SIMKERNEL_PROGRESS_DELAY`` (seconds, default 0.5) changes the delay; 0 shows the bar at once.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO


class ProgressBar:
    """``update(n)`` adds ``n`` done items of ``total``; ``close()`` erases the line; no-op if disabled.

    ``initial`` items count as done before the bar starts (a resumed run): they show in the count but
    not in the rate (items per second of this run) nor the ETA (the items left at that rate).
    """

    def __init__(
        self,
        total: int,
        label: str = "scoring",
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        delay: float | None = None,
        interval: float = 0.1,
        width: int = 30,
        initial: int = 0,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = is_terminal(self.stream) if enabled is None else enabled
        self.total = max(0, total)
        self.label = label
        self.initial = min(max(0, initial), self.total)
        self.done = self.initial
        self.delay = default_delay() if delay is None else delay
        self.interval = interval
        self.width = width
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._drawn = False

    def update(self, n: int) -> None:
        self.done = min(self.total, self.done + n)
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._start < self.delay or now - self._last_draw < self.interval:
            return
        self._last_draw = now
        self._draw(now - self._start)

    def _draw(self, elapsed: float) -> None:
        fraction = self.done / self.total if self.total else 1.0
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "-" * (self.width - filled)
        rate = (self.done - self.initial) / elapsed if elapsed > 0 else 0.0
        line = (
            f"{self.label} [{bar}] {fraction:4.0%} {self.done}/{self.total} rows, "
            f"{elapsed:.1f} s, {rate:.0f} rows/s, ETA {eta(self.total - self.done, rate)}"
        )
        self.stream.write("\r" + line + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def eta(left: int, rate: float) -> str:
    """Time to do ``left`` items at ``rate`` items/s, as ``"42 s"``, ``"7 min"`` or ``"3.2 h"``."""
    if left <= 0:
        return "0 s"
    if rate <= 0:
        return "?"
    seconds = left / rate
    if seconds < 100:
        return f"{seconds:.0f} s"
    if seconds < 6000:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def is_terminal(stream: TextIO) -> bool:
    """True when ``stream`` is an interactive terminal (a closed or odd stream counts as not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def default_delay() -> float:
    """Seconds before the bar first shows: ``$SIMKERNEL_PROGRESS_DELAY`` if it is a number >= 0, else 0.5."""
    try:
        value = float(os.environ.get("SIMKERNEL_PROGRESS_DELAY", "0.5"))
    except ValueError:
        return 0.5
    return value if value >= 0 else 0.5
