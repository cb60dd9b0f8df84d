"""The error contract: OpenAI's error shape on OpenAI's and simkernel's routes, text-embeddings-inference's
on TEI's, the status for each kind of client mistake, a message that names the problem, a 503 with
Retry-After for a full queue, and never a 500 for client input."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from serve_support import (
    API_KEY,
    CONTRACT_TYPES,
    CROSS_MODEL,
    DEFAULT_MODEL,
    ServerProcess,
    assert_queue_full_message,
    loopback_env,
)

TEI_PATHS = {"/", "/embed", "/predict", "/rerank", "/similarity", "/tokenize", "/decode", "/info"}
TEI_TYPES = {
    "validation",
    "empty",
    "overloaded",
    "backend",
    "unhealthy",
    "tokenizer",
    "unauthorized",
    "not_found",
}


def error_of(response: httpx.Response, status: int) -> dict:
    """The error of ``response`` in its path's protocol: TEI's ``{"error", "error_type"}`` on TEI's routes
    (returned as ``{"message", "type"}``), OpenAI's ``{"error": {"message", "type", "code"}}`` elsewhere."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    if response.request.url.path in TEI_PATHS:
        assert set(body) == {"error", "error_type"}, body
        assert body["error_type"] in TEI_TYPES, body
        error = {"message": body["error"], "type": body["error_type"]}
    else:
        error = body["error"]
        assert set(error) == {"message", "type", "code"}
        assert error["type"] == CONTRACT_TYPES[status], (status, error)
    assert isinstance(error["message"], str) and len(error["message"]) > 20
    return error


def test_malformed_json_is_400(client):
    for raw in (b"{bad", b"", b"\xff\xfe\x00", b"[1, 2", b'{"model": NaN}'):
        error = error_of(client.post("/v1/embeddings", content=raw), 400)
        assert "JSON" in error["message"]


def test_a_missing_or_wrong_key_is_401_and_probes_need_none(server):
    bare = httpx.Client(base_url=server.url, trust_env=False)
    body = {"model": DEFAULT_MODEL, "input": "x"}
    assert "Authorization: Bearer" in error_of(bare.post("/v1/embeddings", json=body), 401)["message"]
    wrong = bare.post("/v1/embeddings", json=body, headers={"Authorization": "Bearer " + API_KEY[:-1] + "x"})
    error = error_of(wrong, 401)
    assert "wrong" in error["message"] and API_KEY not in wrong.text
    error_of(bare.post("/v1/embeddings", json=body, headers={"Authorization": API_KEY}), 401)  # no scheme
    error_of(bare.get("/metrics"), 401)
    assert bare.get("/health").status_code == 200 and bare.get("/ready").status_code == 200


def test_a_model_not_served_is_404_listing_the_served_ones(client):
    error = error_of(
        client.post("/v1/embeddings", json={"model": "text-embedding-3-small", "input": "x"}), 404
    )
    assert DEFAULT_MODEL in error["message"] and CROSS_MODEL in error["message"]
    assert error["code"] == "model_not_found"
    # a path or a hub id is never loaded by a request
    for name in ("/etc/passwd", "sentence-transformers/all-mpnet-base-v2", "../models"):
        error_of(
            client.post(
                "/v1/sas", json={"ground_truth_answers": ["a"], "predicted_answers": ["a"], "model": name}
            ),
            404,
        )
    # the wrong kind of model for the endpoint
    error_of(client.post("/v1/embeddings", json={"model": CROSS_MODEL, "input": "x"}), 404)
    error_of(client.post("/rerank", json={"model": DEFAULT_MODEL, "query": "q", "texts": ["t"]}), 404)
    error_of(client.post("/nowhere", json={}), 404)


def test_wrong_types_and_token_ids_are_422(client):
    cases = [
        ("/v1/embeddings", {"model": DEFAULT_MODEL, "input": [1, 2, 3]}, "token ids"),
        ("/v1/embeddings", {"model": DEFAULT_MODEL, "input": [[1, 2], [3]]}, "token ids"),
        ("/v1/embeddings", {"model": DEFAULT_MODEL, "input": ["ok", 3]}, "input[1]"),
        (
            "/v1/embeddings",
            {"model": DEFAULT_MODEL, "input": "x", "encoding_format": "int8"},
            "encoding_format",
        ),
        ("/v1/embeddings", {"model": DEFAULT_MODEL, "input": "x", "dimensions": 64}, "dimensions"),
        ("/v1/embeddings", {"model": 7, "input": "x"}, "'model'"),
        ("/v1/embeddings", {"input": "x"}, "'model'"),
        ("/v1/embeddings", {"model": DEFAULT_MODEL, "input": "\ud800"}, "surrogate"),
        ("/similarity", {"inputs": ["a", "b"]}, "'inputs'"),
        ("/rerank", {"query": "q", "texts": "t"}, "texts"),
        ("/rerank", {"query": "q", "texts": ["t"], "raw_scores": "yes"}, "raw_scores"),
        ("/embed", {"inputs": 3}, "inputs"),
        ("/embed", {"inputs": ["ok", 3]}, "inputs[1]"),
        ("/embed", {"inputs": "\ud800"}, "surrogate"),
        ("/embed", {"inputs": "x", "prompt_name": "query"}, "prompt"),
        ("/predict", {"inputs": {"a": 1}}, "'inputs'"),
        ("/predict", {"inputs": [["a", 2]]}, "inputs[0][1]"),
        ("/tokenize", {"inputs": [None]}, "inputs[0]"),
        ("/decode", {"ids": [[1], "x"]}, "ids"),
        ("/", {"inputs": 3}, "inputs"),
        (
            "/v1/sas",
            {"ground_truth_answers": ["a"], "predicted_answers": ["a", "b"]},
            "number of predictions",
        ),
        ("/v1/sas", {"ground_truth_answers": "a", "predicted_answers": ["a"]}, "ground_truth_answers"),
        ("/v1/sas", {"ground_truth_answers": [[]], "predicted_answers": ["a"]}, "ground_truth_answers[0]"),
        ("/v1/sas", {"ground_truth_answers": ["a"], "predicted_answers": ["a"], "batch": 1}, "batch"),
        ("/v1/reference-match", {"output": "a", "references": "b"}, "references"),
        ("/v1/reference-match", {"output": "a", "references": ["b"], "aggregation": "min"}, "aggregation"),
        ("/v1/reference-match", {"output": "a", "references": ["b"], "threshold": "high"}, "threshold"),
        ("/v1/embeddings", [1, 2], "JSON object"),
    ]
    for path, body, named in cases:
        raw = json.dumps(body).encode("ascii")  # ASCII escapes: a lone surrogate travels as \ud800
        error = error_of(client.post(path, content=raw), 422)
        assert named in error["message"], (path, body, error)


def test_past_the_body_and_input_limits_is_413(tmp_path):
    process = ServerProcess("--model", DEFAULT_MODEL, "--max-request-bytes", "20000", "--max-inputs", "8")
    try:
        http = httpx.Client(base_url=process.url, trust_env=False)
        big = {"model": DEFAULT_MODEL, "input": "x" * 30_000}
        error = error_of(http.post("/v1/embeddings", json=big), 413)
        assert "20,000 bytes" in error["message"] and "--max-request-bytes" in error["message"]

        def chunks():  # no Content-Length: the limit holds as the body streams
            for _ in range(30):
                yield b"x" * 1000

        error_of(http.post("/v1/embeddings", content=chunks()), 413)
        error = error_of(http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": ["a"] * 9}), 413)
        assert "limit of 8" in error["message"]
        truths = [["a"] * 5, ["b"] * 5]
        error_of(
            http.post("/v1/sas", json={"ground_truth_answers": truths, "predicted_answers": ["a", "b"]}), 413
        )
        assert (
            http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": ["a"] * 8}).status_code == 200
        )
    finally:
        status, stderr = process.stop()
    assert status == 0, stderr


def test_a_full_queue_is_503_with_retry_after_and_the_rest_are_answered():
    process = ServerProcess("--model", DEFAULT_MODEL, "--max-queue", "1", env=loopback_env())
    texts = [f"answer number {i} to a question about the weather in spring" for i in range(48)]

    async def burst() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(
            base_url=process.url, trust_env=False, limits=limits, timeout=120
        ) as http:
            calls = [
                http.post(
                    "/v1/embeddings", json={"model": DEFAULT_MODEL, "input": [f"{i} {t}" for t in texts]}
                )
                for i in range(64)
            ]
            return await asyncio.gather(*calls)

    try:
        responses = asyncio.run(burst())
    finally:
        status, stderr = process.stop()
    assert status == 0, stderr
    codes = sorted({r.status_code for r in responses})
    assert codes == [200, 503], codes
    for response in responses:
        if response.status_code == 503:
            assert response.headers["retry-after"] == "1"
            error = error_of(response, 503)
            assert_queue_full_message(error["message"], stderr)


def test_wrong_methods_are_405(client):
    error_of(client.get("/v1/embeddings"), 405)
    error_of(client.post("/health"), 405)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/embeddings",
        "/similarity",
        "/rerank",
        "/v1/sas",
        "/v1/reference-match",
        "/embed",
        "/predict",
        "/tokenize",
        "/decode",
        "/",
    ],
)
def test_an_empty_object_names_the_missing_field(client, path):
    error = error_of(client.post(path, json={}), 422)
    assert "missing" in error["message"]


def test_each_route_answers_in_its_protocols_shape(client, server):
    """The same mistakes on OpenAI's and TEI's routes: each in its own shape and status (an empty input is
    a 400 on both; a malformed body a 400; a missing key a 401; the wrong method a 405)."""
    assert error_of(client.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": ""}), 400)
    assert error_of(client.post("/embed", json={"inputs": ""}), 400)["type"] == "empty"
    for path in ("/v1/embeddings", "/embed", "/"):
        error_of(client.post(path, content=b"{bad"), 400)
        error_of(httpx.Client(base_url=server.url, trust_env=False).post(path, json={}), 401)
    error_of(client.get("/predict"), 405)
    error_of(client.get("/info", params={"model": "no/such-model"}), 404)
