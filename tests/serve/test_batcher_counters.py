"""The batcher's read-only counters that /metrics reports (passes, the distinct texts and the tokens
they ran), against an independent count: the tokenizer's token ids of the distinct texts."""

from __future__ import annotations

import asyncio

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
    batcher = encoder._batcher
    calls = [[f"shared text {i % 8}", f"own text {i}"] for i in range(32)]

    async def run():
        await asyncio.gather(*(encoder.aencode(texts) for texts in calls))

    asyncio.run(run())
    distinct = {t for texts in calls for t in texts}
    assert batcher.passes < len(calls)  # the calls shared passes
    per_pass_distinct = batcher.pass_texts
    assert len(distinct) <= per_pass_distinct <= sum(len(c) for c in calls)
    if batcher.passes == 1:
        assert per_pass_distinct == len(distinct)


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
