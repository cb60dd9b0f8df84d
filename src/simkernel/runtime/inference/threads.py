"""The process-wide thread pools that blocking work runs on when asyncio code awaits it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# pool name -> (max workers, executor once created). "compute": model forwards and tokenization (few:
# onnxruntime already uses every core inside one call); "io": HTTP requests (many may wait at once).
_POOL_SIZES = {"compute": 2, "io": 16}
_EXECUTORS: dict[str, ThreadPoolExecutor] = {}
_EXECUTOR_LOCK = threading.Lock()


def executor(pool: str) -> ThreadPoolExecutor:
    """The process-wide pool ``pool`` (created on first use).

    Each ``asyncio.run()`` makes a new event loop with a new default executor, which would start and
    join a thread per call; shared pools keep the cost of one call near zero.
    """
    found = _EXECUTORS.get(pool)
    if found is None:
        with _EXECUTOR_LOCK:
            found = _EXECUTORS.get(pool)
            if found is None:
                found = ThreadPoolExecutor(_POOL_SIZES[pool], thread_name_prefix=f"simkernel-{pool}")
                _EXECUTORS[pool] = found
    return found


async def run_blocking(fn: Callable[..., T], *args: Any, pool: str = "compute") -> T:
    """Run ``fn(*args)`` on the shared ``pool`` ("compute" or "io") without blocking the event loop
    (onnxruntime, tokenizers and socket reads release the GIL, so other tasks keep running)."""
    import asyncio

    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(executor(pool), fn, *args)
