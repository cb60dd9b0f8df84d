"""SimkernelEmbedding against llama-index-core's BaseEmbedding interface and sentence-transformers' numbers,
inside a real VectorStoreIndex."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from llama_index.core.embeddings import BaseEmbedding
from loop_probe import (
    assert_first_call_loads_off_the_loop,
    distinct_texts,
    loop_kept_ticking,
    run_with_ticker,
)
from tests.copies import COPIES

from simkernel.integrations.llama_index import SimkernelEmbedding

ATOL = 1e-5
ADAPTER = SimkernelEmbedding


def embed_all(adapter, texts):  # the adapter's list call (named alike in both adapters' tests)
    return adapter.get_text_embedding_batch(texts)


async def aembed_all(adapter, texts):
    return await adapter.aget_text_embedding_batch(texts)


@pytest.fixture(scope="module")
def embedding(minilm):
    return SimkernelEmbedding(model=minilm, threads=2)


def test_is_a_llama_index_embedding(embedding, minilm):
    assert isinstance(embedding, BaseEmbedding)
    assert SimkernelEmbedding.class_name() == "SimkernelEmbedding"
    assert embedding.model_name == minilm


def test_public_methods_match_sentence_transformers(embedding, st_model, texts):
    batch = embedding.get_text_embedding_batch(texts)
    np.testing.assert_allclose(np.array(batch), st_model.encode(texts), atol=ATOL)
    np.testing.assert_allclose(embedding.get_text_embedding(texts[1]), st_model.encode(texts[1]), atol=ATOL)
    query = "Which city is the capital of France?"
    np.testing.assert_allclose(embedding.get_query_embedding(query), st_model.encode(query), atol=ATOL)


def test_async_methods_equal_the_sync_ones(embedding, texts):
    async def main():
        return (
            await embedding.aget_text_embedding_batch(texts),
            await embedding.aget_query_embedding(texts[0]),
            await embedding.aget_text_embedding(texts[2]),
        )

    batch, query, text = asyncio.run(main())
    assert batch == embedding.get_text_embedding_batch(texts)
    assert query == embedding.get_query_embedding(texts[0])
    assert text == embedding.get_text_embedding(texts[2])


def test_one_encoder_call_per_list(embedding, monkeypatch):
    calls = []
    encode = embedding.encoder.encode
    monkeypatch.setattr(embedding.encoder, "encode", lambda t, **kw: calls.append(len(t)) or encode(t, **kw))
    embedding.get_text_embedding_batch(distinct_texts(300, "llama_index calls"))
    assert calls == [300]  # LlamaIndex's default chunking (10 a call) would have made 30


def test_async_batch_does_not_block_the_event_loop(minilm):
    embedding = SimkernelEmbedding(model=minilm, threads=2)
    vectors, worst_gap, elapsed = asyncio.run(
        run_with_ticker(embedding.aget_text_embedding_batch(distinct_texts(600, "llama_index async")))
    )
    assert len(vectors) == 600
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


def test_vector_store_index_retrieves_the_right_node(embedding, st_model):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    facts = [
        "Paris is the capital of France.",
        "Photosynthesis happens in chloroplasts.",
        "Mount Everest is in Nepal.",
    ]
    index = VectorStoreIndex(
        [TextNode(text=t, id_=str(i)) for i, t in enumerate(facts)], embed_model=embedding
    )
    hits = index.as_retriever(similarity_top_k=1).retrieve("Where do plants turn light into energy?")
    assert [h.node.get_content() for h in hits] == [facts[1]]
    query = st_model.encode("Where do plants turn light into energy?")
    expected = float(st_model.similarity(query, st_model.encode(facts[1]))[0, 0])
    assert abs(hits[0].score - expected) < ATOL


def test_serialises_and_rebuilds(embedding):
    data = embedding.to_dict()
    assert data["class_name"] == "SimkernelEmbedding" and data["precision"] == "fp32"
    again = SimkernelEmbedding.from_dict(data)
    assert again.model_name == embedding.model_name and again.embed_batch_size == 2048
    assert again.get_text_embedding("same") == embedding.get_text_embedding("same")


def test_bad_settings_are_refused_at_construction():
    with pytest.raises(ValueError, match="precision"):
        SimkernelEmbedding(precision="fp16")
    with pytest.raises(ValueError, match="threads"):
        SimkernelEmbedding(threads=-1)


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
