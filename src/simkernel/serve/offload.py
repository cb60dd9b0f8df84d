"""What a request's handler runs on the event loop, and what in a worker thread.

Every request shares one event loop, ``/health``'s and ``/ready``'s included: work that holds it holds
every other request as long. Tokenizing many or long texts (``/tokenize``, the check of ``truncate:
false``, counting input tokens) and writing a large answer as JSON go to the shared compute pool
(:func:`~simkernel.runtime.inference.threads.run_blocking`: ``tokenizers`` releases the GIL, and while
``json`` holds it the loop gets it back at each of the interpreter's switch intervals); a few short texts
and small answers stay on the loop, where the hand-over to a thread would cost more than the work itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

INLINE_ITEMS = 64  # more texts, or more items in an answer, than this: the work runs in a worker
INLINE_CHARS = 16_384  # more characters of text in all than this: the tokenizing runs in a worker
INLINE_IDS = 4_096  # more token ids in all than this: /decode runs in a worker
CHUNK_ITEMS = 1_024  # a JSON answer written in a worker: at most this many items a call of json's encoder


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


def to_json(value: Any) -> bytes:
    """``value`` as the compact JSON the server answers (floats exactly, non-ASCII escaped)."""
    return json.dumps(value, separators=(",", ":")).encode("ascii")


def to_json_in_parts(value: Any) -> bytes:
    """:func:`to_json` of ``value``, the same bytes, written a part at a time: ``json``'s encoder holds the
    GIL for the whole of one call, so one call on an 80 MB answer would stop the event loop's thread for
    seconds; between parts of at most :data:`CHUNK_ITEMS` items the loop gets the GIL back."""
    parts: list[bytes] = []
    _parts(value, parts)
    return b"".join(parts)


def _parts(value: Any, out: list[bytes]) -> None:
    if not isinstance(value, list) or (
        len(value) <= CHUNK_ITEMS and not any(isinstance(item, list) for item in value)
    ):
        out.append(to_json(value))
        return
    out.append(b"[")
    run: list = []  # items that are not arrays, written together

    def flush() -> None:
        if run:
            out.append(to_json(run)[1:-1])
            out.append(b",")
            run.clear()

    for item in value:
        if isinstance(item, list):
            flush()
            _parts(item, out)
            out.append(b",")
        else:
            run.append(item)
            if len(run) == CHUNK_ITEMS:
                flush()
    flush()
    out[-1] = b"]"  # in place of the last comma (the array is not empty here)


async def json_answer(value: Any) -> bytes:
    """:func:`to_json` of ``value``: in a worker, in parts, for an array of more than
    :data:`INLINE_ITEMS` items."""
    from simkernel.runtime.inference.threads import run_blocking

    if isinstance(value, list) and len(value) > INLINE_ITEMS:
        return await run_blocking(to_json_in_parts, value)
    return to_json(value)
