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

# pool name -> (max workers, executor once created). "compute": model forwards (few: onnxruntime already uses
# every core inside one call); "io": HTTP requests (many may wait on the network at once).
_POOL_SIZES = {"compute": 2, "io": 16}
_EXECUTORS: dict[str, ThreadPoolExecutor] = {}
_EXECUTOR_LOCK = threading.Lock()


def _executor(pool: str) -> ThreadPoolExecutor:
    """The process-wide pool ``pool`` (created on first use).

    Each ``asyncio.run()`` makes a new event loop with a new default executor, which would start and
    join a thread per call; shared pools keep the cost of one metric call near zero.
    """
    executor = _EXECUTORS.get(pool)
    if executor is None:
        with _EXECUTOR_LOCK:
            executor = _EXECUTORS.get(pool)
            if executor is None:
                executor = ThreadPoolExecutor(_POOL_SIZES[pool], thread_name_prefix=f"simkernel-{pool}")
                _EXECUTORS[pool] = executor
    return executor


async def run_blocking(fn: Callable[..., T], *args: Any, pool: str = "compute") -> T:
    """Run ``fn(*args)`` on the shared ``pool`` ("compute" or "io") without blocking the event loop
    (onnxruntime and socket reads release the GIL, so other tasks keep running)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_executor(pool), fn, *args)


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
