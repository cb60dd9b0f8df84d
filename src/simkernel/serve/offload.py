"""What a request's handler runs on the event loop, and what in a worker thread.

Every request shares one event loop, ``/health``'s and ``/ready``'s included: work that holds it holds
every other request as long. Tokenizing many or long texts goes to the shared compute pool
(:func:`~simkernel.runtime.inference.threads.run_blocking`; ``tokenizers`` releases the GIL); a few short
texts stay on the loop, where the hand-over to a thread would cost more than the work itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

INLINE_ITEMS = 64  # more texts, or more items in an answer, than this: the work runs in a worker
INLINE_CHARS = 16_384  # more characters of text in all than this: the tokenizing runs in a worker


def small(inputs: Sequence[str | tuple[str, str]]) -> bool:
    """Whether tokenizing ``inputs`` (texts, or pairs of texts) is cheap enough for the event loop."""
    if len(inputs) > INLINE_ITEMS:
        return False
    chars = 0
    for item in inputs:
        chars += len(item) if isinstance(item, str) else sum(len(text) for text in item)
    return chars <= INLINE_CHARS


async def unless_small(inputs: Sequence[str | tuple[str, str]], fn: Callable[[], T]) -> T:
    """``fn()``, which tokenizes ``inputs``: on the loop when they are :func:`small`, else in a worker."""
    from simkernel.runtime.inference.threads import run_blocking

    if small(inputs):
        return fn()
    return await run_blocking(fn)
