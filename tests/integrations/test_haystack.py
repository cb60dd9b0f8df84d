"""simkernel's Haystack embedders and ranker (simkernel.components.embedders and .rankers) in real
Haystack pipelines (InMemoryDocumentStore, InMemoryEmbeddingRetriever), against
sentence-transformers-haystack's components on the same checkpoints: embeddings and scores within 1e-5.
Their former import path and saved type strings: test_haystack_moved_paths.py."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentEmbedder,
    SentenceTransformersTextEmbedder,
)
from haystack_integrations.components.rankers.sentence_transformers import (
    SentenceTransformersSimilarityRanker,
)
from tests.copies import COPIES

from simkernel.components import ALLOWED_MODULES
from simkernel.components.embedders import SimkernelDocumentEmbedder, SimkernelTextEmbedder
from simkernel.components.rankers import SimkernelSimilarityRanker

ATOL = 1e-5
DOCUMENTS = [
    Document(
        id="paris", content="Paris is the capital and largest city of France.", meta={"topic": "geography"}
    ),
    Document(
        id="photo",
        content="Plants turn sunlight into chemical energy by photosynthesis.",
        meta={"topic": "biology"},
    ),
    Document(
        id="everest",
        content="Mount Everest is the highest mountain above sea level.",
        meta={"topic": "geography"},
    ),
    Document(
        id="python",
        content="Python is a programming language that lets you work quickly.",
        meta={"topic": None},
    ),
    Document(id="berlin", content="Berlin is the capital of Germany.", meta={}),
]
QUERIES = {
    "Which city is the capital of France?": "paris",
    "How do plants make energy from light?": "photo",
    "What is the tallest mountain on Earth?": "everest",
}


@pytest.fixture(scope="module")
def st_document_embedder(checkpoint):
    embedder = SentenceTransformersDocumentEmbedder(
        model=str(checkpoint), device=None, progress_bar=False, meta_fields_to_embed=["topic"], prefix="doc: "
    )
    embedder.warm_up()
    return embedder


@pytest.fixture(scope="module")
def cross_encoder_checkpoint(tmp_path_factory, checkpoint):
    """The torch checkpoint of the store's test cross-encoder, rebuilt as `make models` builds it."""
    from scripts.prepare_test_models import build_test_cross_encoder

    return build_test_cross_encoder(checkpoint, tmp_path_factory.mktemp("cross") / "minilm-l6-cross-encoder")


def test_document_embeddings_equal_sentence_transformers_haystack(minilm, st_document_embedder):
    ours = SimkernelDocumentEmbedder(
        model=minilm, threads=2, progress_bar=False, meta_fields_to_embed=["topic"], prefix="doc: "
    )
    got = ours.run(documents=DOCUMENTS)["documents"]
    expected = st_document_embedder.run(documents=DOCUMENTS)["documents"]
    assert [d.id for d in got] == [d.id for d in DOCUMENTS] and [d.content for d in got] == [
        d.content for d in DOCUMENTS
    ]
    assert all(isinstance(d.embedding, list) and isinstance(d.embedding[0], float) for d in got)
    np.testing.assert_allclose(
        np.array([d.embedding for d in got]), np.array([d.embedding for d in expected]), atol=ATOL
    )
    assert all(d.embedding is None for d in DOCUMENTS)  # the inputs are left as they were


def test_text_embedding_equals_sentence_transformers_haystack(minilm, checkpoint):
    reference = SentenceTransformersTextEmbedder(
        model=str(checkpoint), progress_bar=False, suffix=" ?", normalize_embeddings=True
    )
    reference.warm_up()
    ours = SimkernelTextEmbedder(
        model=minilm, threads=2, progress_bar=False, suffix=" ?", normalize_embeddings=True
    )
    for query in QUERIES:
        np.testing.assert_allclose(
            ours.run(text=query)["embedding"], reference.run(text=query)["embedding"], atol=ATOL
        )


def indexed_store(minilm) -> InMemoryDocumentStore:
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    indexing = Pipeline()
    indexing.add_component("embedder", SimkernelDocumentEmbedder(model=minilm, threads=2, progress_bar=False))
    indexing.add_component("writer", DocumentWriter(document_store=store))
    indexing.connect("embedder.documents", "writer.documents")
    indexing.run({"embedder": {"documents": DOCUMENTS}})
    assert store.count_documents() == len(DOCUMENTS)
    return store


def query_pipeline(pipeline_class, minilm, store, cross_encoder_model=None):
    pipeline = pipeline_class()
    pipeline.add_component(
        "text_embedder", SimkernelTextEmbedder(model=minilm, threads=2, progress_bar=False)
    )
    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=3))
    pipeline.connect("text_embedder.embedding", "retriever.query_embedding")
    if cross_encoder_model is not None:
        pipeline.add_component(
            "ranker", SimkernelSimilarityRanker(model=cross_encoder_model, threads=2, top_k=2)
        )
        pipeline.connect("retriever.documents", "ranker.documents")
    return pipeline


def test_retrieval_pipeline_returns_the_right_documents(minilm, st_model):
    store = indexed_store(minilm)
    pipeline = query_pipeline(Pipeline, minilm, store)
    for query, expected in QUERIES.items():
        hits = pipeline.run({"text_embedder": {"text": query}})["retriever"]["documents"]
        assert hits[0].id == expected, (query, [h.id for h in hits])
        # the store's cosine score is sentence-transformers' cosine of the query and the document
        reference = float(st_model.similarity(st_model.encode(query), st_model.encode(hits[0].content))[0, 0])
        assert abs(hits[0].score - reference) < ATOL


def test_pipeline_run_async_gives_the_same_documents(minilm, cross_encoder_model):
    store = indexed_store(minilm)
    sync = query_pipeline(Pipeline, minilm, store, cross_encoder_model)
    concurrent = query_pipeline(Pipeline, minilm, store, cross_encoder_model)

    async def main():
        return await asyncio.gather(
            *(concurrent.run_async({"text_embedder": {"text": q}, "ranker": {"query": q}}) for q in QUERIES)
        )

    for query, result in zip(QUERIES, asyncio.run(main()), strict=True):
        expected = sync.run({"text_embedder": {"text": query}, "ranker": {"query": query}})
        got = result["ranker"]["documents"]
        assert [d.id for d in got] == [d.id for d in expected["ranker"]["documents"]]
        assert [d.score for d in got] == [d.score for d in expected["ranker"]["documents"]]


@pytest.mark.parametrize("scale_score", [True, False])
def test_ranker_equals_sentence_transformers_haystack(
    cross_encoder_model, cross_encoder_checkpoint, scale_score
):
    reference = SentenceTransformersSimilarityRanker(
        model=str(cross_encoder_checkpoint), top_k=4, scale_score=scale_score
    )
    reference.warm_up()
    ours = SimkernelSimilarityRanker(model=cross_encoder_model, threads=2, top_k=4, scale_score=scale_score)
    documents = [*DOCUMENTS, Document(id="paris", content="A duplicate id scored lower.", score=-5.0)]
    for query in QUERIES:
        got = ours.run(query=query, documents=documents)["documents"]
        expected = reference.run(query=query, documents=documents)["documents"]
        assert [d.id for d in got] == [d.id for d in expected] and len(got) == 4
        np.testing.assert_allclose([d.score for d in got], [d.score for d in expected], atol=ATOL)
    # run's overrides, as in the reference
    threshold = (expected[1].score + expected[2].score) / 2  # between two scores, not on one
    kept = ours.run(query=query, documents=documents, top_k=3, score_threshold=threshold)["documents"]
    assert [d.id for d in kept] == [
        d.id
        for d in reference.run(query=query, documents=documents, top_k=3, score_threshold=threshold)[
            "documents"
        ]
    ]


def test_serialised_pipeline_loads_with_the_allowed_modules(minilm, cross_encoder_model):
    store = InMemoryDocumentStore()
    pipeline = query_pipeline(Pipeline, minilm, store, cross_encoder_model)
    pipeline.add_component(
        "doc_embedder",
        SimkernelDocumentEmbedder(
            model=minilm, precision="int8", meta_fields_to_embed=["topic"], embedding_separator=" | "
        ),
    )
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=ALLOWED_MODULES)
    assert loaded.to_dict()["components"] == pipeline.to_dict()["components"]
    connections = sorted(tuple(c.values()) for c in loaded.to_dict()["connections"])
    assert connections == sorted(tuple(c.values()) for c in pipeline.to_dict()["connections"])
    doc_embedder = loaded.get_component("doc_embedder")
    assert isinstance(doc_embedder, SimkernelDocumentEmbedder)
    assert (doc_embedder.precision, doc_embedder.meta_fields_to_embed, doc_embedder.embedding_separator) == (
        "int8",
        ["topic"],
        " | ",
    )
    assert loaded.get_component("ranker").top_k == 2


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_warmed_up_pipeline_copies_with_the_same_outputs(minilm, cross_encoder_model, how):
    """copy.deepcopy / pickle of a Pipeline holding the three components, after a run (Haystack's own
    InMemoryDocumentStore is left out: it holds a thread pool, which neither can copy)."""
    copy_of = COPIES[how]
    pipeline = Pipeline()
    pipeline.add_component(
        "text_embedder", SimkernelTextEmbedder(model=minilm, threads=2, progress_bar=False)
    )
    pipeline.add_component(
        "document_embedder",
        SimkernelDocumentEmbedder(
            model=minilm, threads=2, progress_bar=False, meta_fields_to_embed=["topic"]
        ),
    )
    pipeline.add_component("ranker", SimkernelSimilarityRanker(model=cross_encoder_model, threads=2, top_k=3))
    query = next(iter(QUERIES))
    inputs = {
        "text_embedder": {"text": query},
        "document_embedder": {"documents": DOCUMENTS},
        "ranker": {"query": query, "documents": DOCUMENTS},
    }

    def outputs(result: dict) -> tuple:
        return (
            result["text_embedder"]["embedding"],
            [d.embedding for d in result["document_embedder"]["documents"]],
            [(d.id, d.score) for d in result["ranker"]["documents"]],
        )

    expected = outputs(pipeline.run(inputs))  # warms the three up
    copied = copy_of(pipeline)
    for name in ("text_embedder", "document_embedder", "ranker"):
        ours, theirs = pipeline.get_component(name), copied.get_component(name)
        assert theirs is not ours and theirs._lock is not ours._lock and theirs.to_dict() == ours.to_dict()
    assert outputs(copied.run(inputs)) == expected
    # the copies loaded this process's shared models at their first run
    assert copied.get_component("text_embedder")._encoder is pipeline.get_component("text_embedder")._encoder
    assert copied.get_component("ranker")._cross_encoder is pipeline.get_component("ranker")._cross_encoder


def test_warm_up_loads_the_shared_model_once(minilm):
    first, second = (
        SimkernelTextEmbedder(model=minilm, threads=2),
        SimkernelDocumentEmbedder(model=minilm, threads=2),
    )
    first.warm_up()
    second.warm_up()
    assert first._encoder is second._encoder


def test_bad_inputs_are_refused(minilm):
    with pytest.raises(TypeError, match="SimkernelDocumentEmbedder"):
        SimkernelTextEmbedder(model=minilm).run(text=["not", "a", "string"])
    with pytest.raises(TypeError, match="SimkernelTextEmbedder"):
        SimkernelDocumentEmbedder(model=minilm).run(documents="a string")
    with pytest.raises(ValueError, match="top_k"):
        SimkernelSimilarityRanker(top_k=0)
    with pytest.raises(ValueError, match="precision"):
        SimkernelDocumentEmbedder(precision="float16")
