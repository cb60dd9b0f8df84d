"""Where the persistent embedding cache lives and how large it may grow: arguments, then the environment.

- ``cache_dir=`` (an argument of the encoders, evaluators and metrics; ``--cache-dir`` on the command line),
  else ``$SIMKERNEL_CACHE_DIR``; neither: no cache (the default). An empty string switches it off.
- ``$SIMKERNEL_CACHE_MAX_MB``: the bound on the cached texts and vectors, in MiB (default 1024).
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "SIMKERNEL_CACHE_DIR"
MAX_MB_ENV = "SIMKERNEL_CACHE_MAX_MB"
DEFAULT_MAX_BYTES = 1 << 30


def resolve_cache_dir(cache_dir: str | os.PathLike | None) -> Path | None:
    """The cache folder: ``cache_dir`` if given, else ``$SIMKERNEL_CACHE_DIR`` if set, else None (off);
    an empty string means off."""
    if cache_dir is None:
        cache_dir = os.environ.get(CACHE_DIR_ENV) or None
    if cache_dir is None or os.fspath(cache_dir) == "":
        return None
    if not isinstance(cache_dir, (str, os.PathLike)):
        raise TypeError(f"cache_dir must be a folder path (str or Path), got {type(cache_dir).__name__}")
    return Path(cache_dir).expanduser()


def default_max_bytes() -> int:
    text = os.environ.get(MAX_MB_ENV)
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        megabytes = float(text)
    except ValueError:
        raise ValueError(
            f"{MAX_MB_ENV}={text!r} is not a number of megabytes; e.g. {MAX_MB_ENV}=512"
        ) from None
    if not megabytes > 0:
        raise ValueError(f"{MAX_MB_ENV}={text!r} must be > 0 megabytes")
    return int(megabytes * (1 << 20))
