"""Counting a shared encoder's calls, for the checks that an adapter embeds a list in one call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def counted_calls(encoder) -> Iterator[list[tuple[str, int]]]:
    """Inside the block, every ``encoder.encode`` / ``encoder.aencode`` call is recorded as
    ``("encode" | "aencode", number of texts)`` in the yielded list (then still runs); restored after."""
    calls: list[tuple[str, int]] = []
    encode, aencode = encoder.encode, encoder.aencode
    encoder.encode = lambda t, **kw: calls.append(("encode", len(t))) or encode(t, **kw)

    async def counted(t, **kw):
        calls.append(("aencode", len(t)))
        return await aencode(t, **kw)

    encoder.aencode = counted
    try:
        yield calls
    finally:
        del encoder.encode, encoder.aencode
