"""An advisory, cross-process file lock (``flock`` on POSIX, ``msvcrt.locking`` on Windows).

Used by the model store (one install of a model at a time) and by the disk embedding cache (one process at
a time sets a damaged cache file aside). Not re-entrant within a process.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path


class LockTimeout(TimeoutError):
    """The lock of ``path`` was not free within the timeout."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        super().__init__(f"timed out after {timeout_s:.0f} s waiting for the lock {path}")
        self.path = path


@contextlib.contextmanager
def hold(path: Path, timeout_s: float) -> Iterator[None]:
    """Hold the lock of the file ``path`` (created if missing); :class:`LockTimeout` after ``timeout_s``."""
    with open(path, "a+b") as handle:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                _try_lock(handle)
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise LockTimeout(path, timeout_s) from exc
                time.sleep(0.05)
        try:
            yield
        finally:
            _unlock(handle)


def _try_lock(handle) -> None:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
    else:
        import fcntl

        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def _unlock(handle) -> None:
    if sys.platform == "win32":  # pragma: no cover
        import msvcrt

        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
    else:
        import fcntl

        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
