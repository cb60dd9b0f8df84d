"""Real clients against a real server: the ``openai`` package, httpx, and simkernel's own eval_lib
"openai" embedding provider. Every result equals the in-process library's, bit for bit: float
embeddings parsed to float32 equal the library's float32 rows, base64 ones are their exact bytes."""

from __future__ import annotations

import base64
import math
from types import SimpleNamespace

import httpx
import numpy as np
import openai
import pytest
from serve_support import API_KEY, CROSS_MODEL, DEFAULT_MODEL

TEXTS = [
    "Berlin is the capital of Germany.",
    "The capital of Germany is Berlin",
    "Столица Франции — Париж.",
    "法国的首都是巴黎。",
    "   ",  # an empty string is a 400, as OpenAI answers it (test_an_empty_input_is_openais_400)
    "a long answer " * 200,  # past the model's 256 tokens: truncated as the library truncates
    "Berlin is the capital of Germany.",  # a repeat
]


def openai_client(server) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=server.url + "/v1", api_key=API_KEY, http_client=httpx.Client(trust_env=False), max_retries=0
    )


def test_openai_client_floats_are_the_librarys_float32_bits(server, library):
    expected = library["text"].encode(TEXTS)
    response = openai_client(server).embeddings.create(
        model=DEFAULT_MODEL, input=TEXTS, encoding_format="float"
    )
    got = np.array([item.embedding for item in response.data], dtype=np.float32)
    assert [item.index for item in response.data] == list(range(len(TEXTS)))
    assert got.tobytes() == expected.tobytes()
    assert response.model == DEFAULT_MODEL
    tokens = sum(len(e.ids) for e in library["text"]._tokenizer.encode(TEXTS))
    assert response.usage.prompt_tokens == tokens == response.usage.total_tokens


def test_openai_client_base64_is_the_librarys_bytes(server, library):
    """The openai client asks for base64 by default and decodes it itself (numpy float32)."""
    expected = library["text"].encode(TEXTS)
    response = openai_client(server).embeddings.create(model=DEFAULT_MODEL, input=TEXTS)
    got = np.array([item.embedding for item in response.data], dtype=np.float32)
    assert got.tobytes() == expected.tobytes()


def test_httpx_base64_bytes_and_one_string_input(client, library):
    body = client.post(
        "/v1/embeddings", json={"model": DEFAULT_MODEL, "input": TEXTS, "encoding_format": "base64"}
    )
    assert body.status_code == 200, body.text
    rows = [base64.b64decode(item["embedding"]) for item in body.json()["data"]]
    assert b"".join(rows) == library["text"].encode(TEXTS).astype("<f4").tobytes()
    one = client.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": "Paris."}).json()
    assert len(one["data"]) == 1
    assert (
        np.array(one["data"][0]["embedding"], np.float32).tobytes()
        == library["text"].encode(["Paris."]).tobytes()
    )


def test_eval_lib_openai_provider_pointed_at_the_server(server, library, monkeypatch):
    """simkernel's "openai" provider (what eval_lib users configure) with OPENAI_BASE_URL at the server:
    its embeddings are the library's, and ReferenceMatchMetric's score through it is the local one's."""
    from simkernel.metrics import OpenAIEmbeddingProvider, ReferenceMatchMetric

    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    provider = OpenAIEmbeddingProvider(DEFAULT_MODEL, max_retries=0)
    vectors, cost = provider.embed_sync(TEXTS)
    assert vectors.astype(np.float32).tobytes() == library["text"].encode(TEXTS).tobytes()
    assert (
        vectors.astype(np.float32).astype(np.float64).tobytes() == vectors.tobytes()
    )  # float32 values, exactly

    import asyncio

    case = SimpleNamespace(actual_output="The capital of France is Paris.")
    refs = ["Paris is the capital of France.", "Lyon is a city in France."]
    remote = asyncio.run(ReferenceMatchMetric(references=refs, embedding_provider=provider).evaluate(case))
    local = asyncio.run(
        ReferenceMatchMetric(references=refs, embedding_provider="local", model_name=DEFAULT_MODEL).evaluate(
            case
        )
    )
    assert remote["score"] == pytest.approx(local["score"], abs=1e-6)
    assert remote["success"] == local["success"]


def test_similarity_is_the_cosine_of_the_librarys_embeddings(client, library):
    sentences = TEXTS[1:5]
    response = client.post(
        "/similarity", json={"inputs": {"source_sentence": TEXTS[0], "sentences": sentences}}
    )
    assert response.status_code == 200, response.text
    vectors = library["text"].encode([TEXTS[0], *sentences]).astype(np.float64)
    for got, row in zip(response.json(), vectors[1:], strict=True):
        norms = np.linalg.norm(row) * np.linalg.norm(vectors[0])
        expected = float(row @ vectors[0] / norms) if norms else 0.0
        assert math.isclose(got, expected, abs_tol=1e-6)


@pytest.mark.parametrize("raw_scores", [False, True])
def test_rerank_is_the_librarys_cross_encoder_sorted(client, library, raw_scores):
    query, texts = "What is the capital of France?", ["Paris is the capital.", "Berlin.", "France", "Paris"]
    response = client.post(
        "/rerank", json={"query": query, "texts": texts, "raw_scores": raw_scores, "return_text": True}
    )
    assert response.status_code == 200, response.text
    scores = library["cross"].predict([(query, t) for t in texts], apply_activation=not raw_scores)
    expected = sorted(range(len(texts)), key=lambda i: -scores[i])
    ranked = response.json()
    assert [item["index"] for item in ranked] == expected
    assert [np.float32(item["score"]) for item in ranked] == [scores[i] for i in expected]
    assert [item["text"] for item in ranked] == [texts[i] for i in expected]
    assert "text" not in client.post("/rerank", json={"query": query, "texts": texts}).json()[0]


@pytest.mark.parametrize("model", [DEFAULT_MODEL, CROSS_MODEL])
def test_sas_is_the_evaluators_output(client, model):
    from simkernel.components.evaluators import SASEvaluator

    truths = ["Berlin", ["Paris", "the capital of France"], "1889"]
    predictions = ["Berlin", "Lyon", "in 1889"]
    expected = SASEvaluator(model=model, token=None).run(
        ground_truth_answers=truths, predicted_answers=predictions
    )
    got = client.post(
        "/v1/sas", json={"ground_truth_answers": truths, "predicted_answers": predictions, "model": model}
    ).json()
    assert got["individual_scores"] == [float(s) for s in expected["individual_scores"]]
    assert got["score"] == float(expected["score"])
    assert got["model"] == model


@pytest.mark.parametrize("aggregation", ["max", "mean"])
def test_reference_match_is_the_metrics_result(client, aggregation):
    import asyncio

    from simkernel.metrics import ReferenceMatchMetric

    refs = ["Paris is the capital of France.", "Столица Франции — Париж.", "Lyon"]
    metric = ReferenceMatchMetric(
        threshold=0.6,
        references=refs,
        aggregation=aggregation,
        embedding_provider="local",
        model_name=DEFAULT_MODEL,
    )
    expected = asyncio.run(metric.evaluate(SimpleNamespace(actual_output="Paris")))
    got = client.post(
        "/v1/reference-match",
        json={"output": "Paris", "references": refs, "aggregation": aggregation, "threshold": 0.6},
    ).json()
    assert {k: got[k] for k in expected} == expected
    assert got["threshold"] == 0.6


def test_models_health_ready_and_metrics(server, client):
    listed = client.get("/v1/models").json()
    assert [m["id"] for m in listed["data"]] == [DEFAULT_MODEL, CROSS_MODEL]
    assert [m.id for m in openai_client(server).models.list().data] == [DEFAULT_MODEL, CROSS_MODEL]
    bare = httpx.Client(base_url=server.url, trust_env=False)  # probes need no key
    assert bare.get("/health").json() == {"status": "ok"}
    assert bare.get("/ready").json()["models"] == [DEFAULT_MODEL, CROSS_MODEL]
    before = _metric(client, 'simkernel_requests_total{endpoint="/v1/embeddings",method="POST",status="200"}')
    tokens_before = _metric(client, f'simkernel_input_tokens_total{{model="{DEFAULT_MODEL}"}}')
    passes_before = _metric(client, f'simkernel_passes_total{{model="{DEFAULT_MODEL}"}}')
    fresh = ["a text these tests embed once for the metrics test"]
    client.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": fresh}).raise_for_status()
    assert (
        _metric(client, 'simkernel_requests_total{endpoint="/v1/embeddings",method="POST",status="200"}')
        == before + 1
    )
    assert _metric(client, f'simkernel_input_tokens_total{{model="{DEFAULT_MODEL}"}}') > tokens_before
    assert _metric(client, f'simkernel_passes_total{{model="{DEFAULT_MODEL}"}}') == passes_before + 1
    text = client.get("/metrics").text
    for name in ("simkernel_request_seconds_bucket", "simkernel_pass_texts_total", "simkernel_pass_tokens_total",
                 "simkernel_queue_depth", "simkernel_pass_tokens_per_second"):  # fmt: skip
        assert name in text


def _metric(client, line_start: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.split()[-1])
    return 0.0


def test_small_answers_are_not_held_for_the_clients_delayed_ack(client):
    """TCP_NODELAY on the server's connections: without it each response's body waits for the ACK of
    its head (~40 ms with Linux's delayed ACK); with it a probe takes about a millisecond."""
    import statistics
    import time

    times = []
    for _ in range(30):
        started = time.perf_counter()
        client.get("/health").raise_for_status()
        times.append(time.perf_counter() - started)
    assert statistics.median(times) < 0.02, f"median {statistics.median(times) * 1000:.1f} ms"


def test_an_empty_input_is_openais_400(server):
    """OpenAI's API refuses an empty string (alone or in an array) with a 400; so does the server, and the
    openai client raises its BadRequestError with the server's message."""
    for given in ("", ["Paris.", ""], []):
        with pytest.raises(openai.BadRequestError, match="empty"):
            openai_client(server).embeddings.create(model=DEFAULT_MODEL, input=given)
