"""How long an awaited call kept the event loop from running a 1 ms ticker (its worst gap)."""

from __future__ import annotations

import asyncio
import time


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


def distinct_texts(count: int, tag: str) -> list[str]:
    """``count`` different sentences of 20-40 words; a ``tag`` of its own per test keeps them out of the
    shared encoder's cache (the process's other tests embed theirs)."""
    words = "alpha beta gamma delta river mountain quickly slowly green purple seven eleven".split()
    return [
        " ".join(words[(i * 7 + k * 3) % len(words)] for k in range(20 + i % 20)) + f" {tag} number {i}"
        for i in range(count)
    ]
