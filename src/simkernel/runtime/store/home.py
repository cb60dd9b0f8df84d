"""Where simkernel keeps its files: the store's root folder.

``$SIMKERNEL_HOME``, else ``$XDG_CACHE_HOME/simkernel``, else ``~/.cache/simkernel``
(``%LOCALAPPDATA%\\simkernel`` on Windows). The store itself (bundles, locks, staging) is
:mod:`simkernel.runtime.store.bundles`; the manifest check (:mod:`simkernel.runtime.store.manifest`)
keeps its verification stamps of bundles outside the store under ``<root>/verified``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def store_root() -> Path:
    """The store's root folder (not created here)."""
    home = os.environ.get("SIMKERNEL_HOME")
    if home:
        return Path(home).expanduser()
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "simkernel"
    cache = os.environ.get("XDG_CACHE_HOME")
    base = Path(cache).expanduser() if cache else Path.home() / ".cache"
    return base / "simkernel"
