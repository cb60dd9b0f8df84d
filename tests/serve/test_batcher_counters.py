"""The batcher's read-only counters that /metrics reports (passes, the distinct texts and the tokens
they ran), against an independent count: the tokenizer's token ids of the distinct texts."""

from __future__ import annotations

import asyncio
import threading

import pytest
from serve_support import DEFAULT_MODEL

from simkernel.errors import ModelError
from simkernel.runtime import TextEncoder


@pytest.fixture
def encoder():
    return TextEncoder(DEFAULT_MODEL, cache_size=0, batching=True)


def tokens_of(encoder, texts) -> int:
    return sum(len(e.ids) for e in encoder._tokenizer.encode(list(dict.fromkeys(texts))))


def test_a_call_counts_its_distinct_texts_and_their_tokens(encoder):
    batcher = encoder._batcher
    texts = ["Berlin", "the capital of Germany is Berlin", "Berlin", "法国的首都是巴黎。", ""]
    encoder.encode(texts)
    assert (batcher.passes, batcher.pass_texts, batcher.pass_tokens) == (1, 4, tokens_of(encoder, texts))
    encoder.encode(["one more"])
    assert batcher.passes == 2 and batcher.pass_texts == 5
    assert batcher.pass_tokens == tokens_of(encoder, texts) + tokens_of(encoder, ["one more"])


def test_concurrent_calls_count_each_text_of_a_shared_pass_once(encoder):
    """32 calls queued behind a held pass, 8 texts shared among them: the next pass runs them all at once,
    and counts each distinct text (and its tokens) once, however many calls asked for it."""
    batcher = encoder._batcher
    inner = batcher._run_pass
    held, opened = threading.Event(), threading.Event()

    def gated(encodings, batch_size):
        if not held.is_set():
            held.set()
            assert opened.wait(60), "the gate was never opened"
        return inner(encodings, batch_size)

    batcher._run_pass = gated
    holder_texts = ["the call that holds the first pass"]
    holder = threading.Thread(target=encoder.encode, args=(holder_texts,))
    holder.start()
    assert held.wait(60)
    calls = [[f"shared text {i % 8}", f"own text {i}"] for i in range(32)]

    async def run():
        tasks = [asyncio.ensure_future(encoder.aencode(texts)) for texts in calls]
        while batcher.waiting < len(calls):
            await asyncio.sleep(0.002)
        opened.set()
        await asyncio.gather(*tasks)

    try:
        asyncio.run(run())
    finally:
        opened.set()
        holder.join(60)
    distinct = [t for texts in calls for t in texts]
    assert batcher.passes == 2  # the held pass, then one pass for all 32 calls
    assert batcher.pass_texts == len(holder_texts) + len(set(distinct)) == 1 + 8 + 32
    assert batcher.pass_tokens == tokens_of(encoder, holder_texts) + tokens_of(encoder, distinct)


def test_a_failed_pass_counts_nothing(encoder):
    batcher = encoder._batcher
    inner = batcher._run_pass

    def failing(encodings, batch_size):
        raise ModelError("the model failed (raised by the test)")

    batcher._run_pass = failing
    with pytest.raises(ModelError):
        encoder.encode(["never run"])
    batcher._run_pass = inner
    assert (batcher.pass_texts, batcher.pass_tokens) == (0, 0)
