"""The embedding-provider interface of the vector metrics, and the thread pool blocking work runs on."""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

_EXECUTOR: ThreadPoolExecutor | None = None
_EXECUTOR_LOCK = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """One process-wide pool for model forwards and HTTP requests (created on first use).

    Each ``asyncio.run()`` makes a new event loop with a new default executor, which would start and
    join a thread per call; a shared pool keeps the cost of one metric call near zero.
    """
    global _EXECUTOR
    if _EXECUTOR is None:
        with _EXECUTOR_LOCK:
            if _EXECUTOR is None:
                _EXECUTOR = ThreadPoolExecutor(max_workers=4, thread_name_prefix="simkernel-embed")
    return _EXECUTOR


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` on the shared pool without blocking the event loop (onnxruntime and socket
    reads release the GIL, so other tasks keep running)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_executor(), fn, *args)


class EmbeddingProvider(ABC):
    """Turns texts into embedding vectors.

    ``embed`` returns ``(embeddings, cost_usd)``: an ``(n, dim)`` array (or list of lists) in the
    order of ``texts``, and the cost of the call in US dollars (0.0 for local models).
    """

    model_name: str

    @abstractmethod
    async def embed(self, texts: list[str]) -> tuple[np.ndarray, float]:
        """Embed ``texts`` in one call; returns ``(embeddings, cost_usd)``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_name={self.model_name!r})"
