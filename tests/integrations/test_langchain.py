"""SimkernelEmbeddings against langchain-core's Embeddings interface and sentence-transformers' numbers."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from loop_probe import (
    assert_first_call_loads_off_the_loop,
    distinct_texts,
    loop_kept_ticking,
    run_with_ticker,
)
from tests.copies import COPIES

from simkernel.integrations.langchain import SimkernelEmbeddings

ATOL = 1e-5
ADAPTER = SimkernelEmbeddings


def embed_all(adapter, texts):  # the adapter's list call (named alike in both adapters' tests)
    return adapter.embed_documents(texts)


async def aembed_all(adapter, texts):
    return await adapter.aembed_documents(texts)


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
    assert elapsed > 0.3 and loop_kept_ticking(worst_gap, elapsed), (elapsed, worst_gap)


def test_the_first_async_call_loads_the_model_off_the_event_loop(minilm, monkeypatch):
    """The first call loads the model (an empty registry of shared instances for this test, so the load
    really happens here; the other tests' instances come back after it): it runs on a worker thread while
    the loop keeps ticking (loaded on the loop, it stalls for all of it)."""
    from simkernel.runtime import get_text_encoder

    before = get_text_encoder(minilm, threads=2)
    monkeypatch.setattr("simkernel.runtime.shared._INSTANCES", {})
    adapter = ADAPTER(model=minilm, threads=2)
    assert_first_call_loads_off_the_loop(adapter, aembed_all(adapter, ["the first call"]), before)


def test_bad_settings_are_refused_at_construction():
    with pytest.raises(ValueError, match="precision"):
        SimkernelEmbeddings(precision="fp16")
    with pytest.raises(ValueError, match="threads"):
        SimkernelEmbeddings(threads=0)
    with pytest.raises(ValueError, match="batch_size"):
        SimkernelEmbeddings(batch_size=0)


@pytest.mark.parametrize("how", sorted(COPIES))
def test_copies_made_after_the_first_call_embed_the_same(minilm, texts, how, caplog):
    adapter = ADAPTER(model=minilm, threads=2)
    expected = embed_all(adapter, texts)  # loads the model
    with caplog.at_level(logging.WARNING):
        copied = COPIES[how](adapter)
    assert not caplog.records  # nothing left out with a warning (LlamaIndex logs what it cannot pickle)
    assert embed_all(copied, texts) == expected
    assert asyncio.run(aembed_all(copied, texts)) == expected
    assert copied.encoder is adapter.encoder  # loaded again at first use: this process's shared model


def test_precision_int8_gives_the_int8_encoders_vectors(minilm, texts):
    """``precision="int8"`` embeds with the int8 model: the int8 encoder's vectors bit for bit (sync and
    async), which differ from fp32's."""
    from simkernel.runtime import TextEncoder

    int8 = TextEncoder(minilm, precision="int8", threads=2).encode(texts).tolist()
    fp32 = TextEncoder(minilm, precision="fp32", threads=2).encode(texts).tolist()
    assert int8 != fp32
    adapter = ADAPTER(model=minilm, precision="int8", threads=2)
    assert embed_all(adapter, texts) == int8
    assert asyncio.run(aembed_all(adapter, texts)) == int8
    assert embed_all(ADAPTER(model=minilm, threads=2), texts) == fp32


def test_normalize_is_honoured_on_a_model_that_does_not_normalise_itself(minilm, unnormalized_minilm, texts):
    """On all-MiniLM-L6-v2 without its Normalize module: ``normalize=False`` gives the raw pooled vectors (not
    unit length; the direction of the whole model's vectors, which the tests above hold to
    sentence-transformers'), ``normalize=True`` (the default) those divided by their float64 norms; sync and
    async alike."""
    raw = np.array(
        embed_all(ADAPTER(model=unnormalized_minilm, normalize=False, threads=2), texts), dtype=np.float64
    )
    norms = np.linalg.norm(raw, axis=1)
    assert np.all(np.abs(norms - 1) > 0.1), norms  # the raw vectors are far from unit length
    whole = np.array(embed_all(ADAPTER(model=minilm, threads=2), texts), dtype=np.float64)
    np.testing.assert_allclose(raw / norms[:, None], whole, atol=1e-6)
    unit = np.array(embed_all(ADAPTER(model=unnormalized_minilm, threads=2), texts), dtype=np.float64)
    np.testing.assert_allclose(unit, raw / norms[:, None], atol=1e-6)
    both = ADAPTER(model=unnormalized_minilm, normalize=False, threads=2)
    assert asyncio.run(aembed_all(both, texts)) == embed_all(both, texts)
