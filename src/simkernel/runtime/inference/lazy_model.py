"""Copying and pickling an object that loads a model on first use under a lock (the Haystack components,
the "local" embedding provider, the adapters), as Haystack's and the tools' own classes can be copied.

A lock and a loaded model (an onnxruntime session, the batcher's threads) cannot be pickled, so
``copy.deepcopy`` of such an object (or of a Haystack ``Pipeline`` holding it), ``pickle`` and a process
pool would fail with "cannot pickle '_thread.lock' object". :class:`LazyModelState` leaves both out: the
copy has a new lock and no model, and loads it at its first use (in this process the process-wide shared
instance, the same object as the original's; in another process that process's own).
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

__all__ = ["LazyModelState"]


class LazyModelState:
    """Mixin: ``__getstate__`` / ``__setstate__`` without the loaded model and the lock.

    ``_LOADED_MODEL_ATTRIBUTES`` names the attributes that hold the loaded model (None until loaded):
    copies get None there. ``_lock``, when the instance has one, is a new ``threading.Lock`` in the copy.
    """

    _LOADED_MODEL_ATTRIBUTES: ClassVar[tuple[str, ...]] = ("_encoder",)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._LOADED_MODEL_ATTRIBUTES:
            if name in state:
                state[name] = None
        if "_lock" in state:
            state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "_lock" in state:
            self._lock = threading.Lock()
