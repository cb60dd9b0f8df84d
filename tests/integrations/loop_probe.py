"""How long an awaited call kept the event loop from running a 1 ms ticker (its worst gap)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any


async def run_with_ticker(coro) -> tuple[object, float, float]:
    """(the result of ``coro``, the ticker's longest gap in seconds, the call's wall time)."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    started = time.perf_counter()
    result = await coro
    elapsed = time.perf_counter() - started
    done.set()
    await task
    return result, max(gaps), elapsed


def loop_kept_ticking(worst_gap: float, elapsed: float) -> bool:
    """Whether the event loop kept running through a call of ``elapsed`` seconds: its longest stall is under
    a fifth of the call (a call that blocks the loop stalls it for all of it, or for a whole batch of
    several), or under 0.1 s (what a loaded machine's scheduler alone may cost a short call)."""
    return worst_gap < max(0.1, elapsed / 5)


def assert_first_call_loads_off_the_loop(adapter: Any, first_call: Awaitable[list], before: Any) -> None:
    """``first_call``, the first async call of ``adapter`` (one text; its model not loaded yet), loads a
    new model (not ``before``, the one loaded earlier) and the event loop keeps ticking while it loads:
    loaded on the loop, the ticker would stall for all of the call."""
    vectors, worst_gap, elapsed = asyncio.run(run_with_ticker(first_call))
    assert adapter.encoder is not before and len(vectors) == 1  # a new model was loaded by this call
    assert worst_gap < elapsed / 2, (worst_gap, elapsed)


def distinct_texts(count: int, tag: str) -> list[str]:
    """``count`` different sentences of 20-40 words; a ``tag`` of its own per test keeps them out of the
    shared encoder's cache (the process's other tests embed theirs)."""
    words = "alpha beta gamma delta river mountain quickly slowly green purple seven eleven".split()
    return [
        " ".join(words[(i * 7 + k * 3) % len(words)] for k in range(20 + i % 20)) + f" {tag} number {i}"
        for i in range(count)
    ]
