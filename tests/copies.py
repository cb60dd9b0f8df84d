"""The two ways the copy tests copy an object: ``copy.deepcopy`` and a pickle round trip (what a process
pool, Ray or a cache does with it)."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

COPIES: dict[str, Callable[[Any], Any]] = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda obj: pickle.loads(pickle.dumps(obj)),
}
