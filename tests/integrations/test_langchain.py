"""SimkernelEmbeddings against langchain-core's Embeddings interface and sentence-transformers' numbers."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from loop_probe import distinct_texts, run_with_ticker

from simkernel.integrations.langchain import SimkernelEmbeddings

ATOL = 1e-5


@pytest.fixture(scope="module")
def embeddings(minilm):
    return SimkernelEmbeddings(model=minilm, threads=2)


def test_is_a_langchain_embeddings(embeddings):
    assert isinstance(embeddings, Embeddings)


def test_documents_and_query_match_sentence_transformers(embeddings, st_model, texts):
    vectors = embeddings.embed_documents(texts)
    assert isinstance(vectors, list) and len(vectors) == len(texts)
    assert all(isinstance(v, list) and len(v) == 384 and isinstance(v[0], float) for v in vectors)
    np.testing.assert_allclose(np.array(vectors), st_model.encode(texts), atol=ATOL)
    query = embeddings.embed_query("Which city is the capital of France?")
    np.testing.assert_allclose(query, st_model.encode("Which city is the capital of France?"), atol=ATOL)


def test_async_methods_equal_the_sync_ones(embeddings, texts):
    async def main():
        return await embeddings.aembed_documents(texts), await embeddings.aembed_query(texts[0])

    documents, query = asyncio.run(main())
    assert documents == embeddings.embed_documents(texts)
    assert query == embeddings.embed_query(texts[0])


def test_one_encoder_call_per_list(embeddings, monkeypatch, texts):
    calls = []
    encode = embeddings.encoder.encode
    monkeypatch.setattr(embeddings.encoder, "encode", lambda t, **kw: calls.append(len(t)) or encode(t, **kw))
    embeddings.embed_documents(texts)
    assert calls == [len(texts)]


def test_aembed_documents_does_not_block_the_event_loop(minilm):
    embeddings = SimkernelEmbeddings(model=minilm, threads=2)
    many = distinct_texts(600, "langchain async")
    vectors, worst_gap, elapsed = asyncio.run(run_with_ticker(embeddings.aembed_documents(many)))
    assert len(vectors) == 600
    # the model works for a long while; the loop keeps ticking every few ms meanwhile
    assert elapsed > 0.3 and worst_gap < 0.1, (elapsed, worst_gap)


def test_bad_settings_are_refused_at_construction():
    with pytest.raises(ValueError, match="precision"):
        SimkernelEmbeddings(precision="fp16")
    with pytest.raises(ValueError, match="threads"):
        SimkernelEmbeddings(threads=0)
    with pytest.raises(ValueError, match="batch_size"):
        SimkernelEmbeddings(batch_size=0)
