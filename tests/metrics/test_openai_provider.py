"""The "openai" provider against a real HTTP server on 127.0.0.1 speaking the embeddings protocol."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from metrics_support import SERVER_KEY, eval_lib_formula, server_embedding, server_tokens

from simkernel.metrics import (
    EmbeddingAPIError,
    EmbeddingConfigurationError,
    EvalTestCase,
    OpenAIEmbeddingProvider,
    ReferenceMatchMetric,
    SemanticSimilarityMetric,
    evaluate,
)
from simkernel.metrics.embedding_providers.openai import MAX_INPUTS_PER_REQUEST

REFS = ["Paris is the capital of France.", "Столица Франции — Париж.", "法国的首都是巴黎。"]
CASE = EvalTestCase(input="Capital of France?", actual_output="The capital of France is Paris.")


def fast(**kwargs) -> OpenAIEmbeddingProvider:
    """A provider with millisecond backoff, so retry tests run fast."""
    return OpenAIEmbeddingProvider(initial_backoff=0.01, max_backoff=0.02, **kwargs)


def test_one_request_with_the_protocol_fields_and_usage_cost(embedding_server):
    metric = ReferenceMatchMetric(references=REFS, embedding_provider="openai")
    result = asyncio.run(metric.evaluate(CASE))

    assert len(embedding_server.requests) == 1
    request = embedding_server.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["authorization"] == f"Bearer {SERVER_KEY}"
    assert request["headers"]["content-type"] == "application/json"
    assert request["body"] == {
        "model": "text-embedding-3-small",
        "input": [CASE.actual_output, *REFS],
        "encoding_format": "float",
    }
    tokens = server_tokens([CASE.actual_output, *REFS])
    cost = tokens * 0.02 / 1_000_000
    assert cost > 0
    assert result["evaluation_cost"] == pytest.approx(cost, rel=1e-12)
    assert result["evaluation_log"]["embedding_cost"] == pytest.approx(cost, rel=1e-12)

    vectors = np.array([server_embedding(t) for t in [CASE.actual_output, *REFS]], dtype=np.float32)
    score, sims = eval_lib_formula(vectors, "max")
    assert result["score"] == pytest.approx(score, abs=1e-5)
    assert result["evaluation_log"]["similarities"] == [round(s, 4) for s in sims]


def test_evaluate_reports_the_cost_and_calls_once_per_case(embedding_server):
    cases = [
        EvalTestCase(input="q1", actual_output="Paris.", expected_output="Paris is the capital."),
        EvalTestCase(input="q2", actual_output="Lyon.", expected_output=None),
    ]
    metric = SemanticSimilarityMetric(embedding_provider="openai", model_name="text-embedding-3-large")
    results = asyncio.run(evaluate(cases, [metric], verbose=False))

    assert [r["body"]["input"] for r in embedding_server.requests] == [
        ["Paris.", "Paris is the capital."],
        ["Lyon.", ""],
    ]
    assert all(r["body"]["model"] == "text-embedding-3-large" for r in embedding_server.requests)
    for (none, [case_result]), case in zip(results, cases, strict=True):
        assert none is None
        data = case_result.metrics_data[0]
        expected_cost = server_tokens([case.actual_output, case.expected_output or ""]) * 0.13 / 1e6
        assert data.evaluation_cost == pytest.approx(expected_cost, rel=1e-12)


def test_429_is_retried_after_retry_after(embedding_server):
    embedding_server.script = [
        {"status": 429, "headers": {"Retry-After": "0.3"}, "message": "Rate limit reached"}
    ]
    vectors, cost = fast().embed_sync(["a b", "c"])

    assert len(embedding_server.requests) == 2
    waited = embedding_server.requests[1]["t"] - embedding_server.requests[0]["t"]
    assert waited >= 0.3  # the server's Retry-After, not the 10 ms backoff
    assert vectors.tolist() == [server_embedding("a b"), server_embedding("c")]
    assert cost == pytest.approx(server_tokens(["a b", "c"]) * 0.02 / 1e6, rel=1e-12)


def test_retry_after_ms_header(embedding_server):
    embedding_server.script = [{"status": 503, "headers": {"retry-after-ms": "200"}}]
    fast().embed_sync(["x"])
    assert embedding_server.requests[1]["t"] - embedding_server.requests[0]["t"] >= 0.2


def test_5xx_is_retried_up_to_max_retries(embedding_server):
    embedding_server.script = [{"status": 500}, {"status": 502}]
    vectors, _ = fast(max_retries=2).embed_sync(["x"])
    assert len(embedding_server.requests) == 3
    assert vectors.tolist() == [server_embedding("x")]


def test_5xx_beyond_retries_raises_with_status_and_server_message(embedding_server):
    embedding_server.script = [
        {"status": 500, "message": "The server had an error while processing your request."}
    ] * 3
    with pytest.raises(EmbeddingAPIError) as info:
        fast(max_retries=2).embed_sync(["x"])
    assert len(embedding_server.requests) == 3
    assert info.value.status == 500
    assert info.value.server_message == "The server had an error while processing your request."
    assert "HTTP 500 after 3 attempts" in str(info.value)
    assert "The server had an error while processing your request." in str(info.value)


def test_401_is_not_retried_and_names_the_key(embedding_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    metric = ReferenceMatchMetric(references=REFS, embedding_provider="openai")
    with pytest.raises(EmbeddingAPIError) as info:
        asyncio.run(metric.evaluate(CASE))
    assert len(embedding_server.requests) == 1
    assert embedding_server.requests[0]["headers"]["authorization"] == "Bearer sk-wrong"
    assert info.value.status == 401
    message = str(info.value)
    assert "HTTP 401" in message
    assert "Incorrect API key provided" in message
    assert "OPENAI_API_KEY" in message


def test_400_is_not_retried(embedding_server):
    embedding_server.script = [{"status": 400, "message": "'$.input' is invalid."}]
    with pytest.raises(EmbeddingAPIError, match=r"HTTP 400: '\$\.input' is invalid\."):
        fast().embed_sync(["x"])
    assert len(embedding_server.requests) == 1


def test_timeout_raises_and_is_retried(embedding_server):
    embedding_server.script = [{"sleep": 1.0}, {"sleep": 1.0}]
    with pytest.raises(EmbeddingAPIError, match="timed out after 0.2 s") as info:
        fast(timeout=0.2, max_retries=1).embed_sync(["x"])
    assert info.value.status is None
    assert len(embedding_server.requests) == 2


def test_timeout_then_success(embedding_server):
    embedding_server.script = [{"sleep": 1.0}]
    vectors, _ = fast(timeout=0.3, max_retries=1).embed_sync(["x"])
    assert vectors.tolist() == [server_embedding("x")]


def test_missing_key_for_openai_is_a_clear_error_before_any_request(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    metric = ReferenceMatchMetric(references=REFS)  # default provider: openai
    with pytest.raises(EmbeddingConfigurationError, match="OPENAI_API_KEY") as info:
        asyncio.run(metric.evaluate(CASE))
    assert "embedding_provider='local'" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_compatible_server_without_key_sends_no_authorization(embedding_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(EmbeddingAPIError, match="HTTP 401"):  # this server wants a key
        fast().embed_sync(["x"])
    assert "authorization" not in embedding_server.requests[0]["headers"]


def test_explicit_settings_override_the_environment(embedding_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/nowhere")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    provider = fast(
        api_key=SERVER_KEY, base_url=embedding_server.url + "/", organization="org-1", project="proj-1"
    )
    provider.embed_sync(["x"])
    headers = embedding_server.requests[0]["headers"]
    assert headers["openai-organization"] == "org-1"
    assert headers["openai-project"] == "proj-1"


def test_unreachable_server_is_a_transport_error(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    provider = fast(base_url="http://127.0.0.1:9/v1", max_retries=1)  # port 9 (discard): nothing listens
    with pytest.raises(EmbeddingAPIError, match="could not connect") as info:
        provider.embed_sync(["x"])
    assert info.value.status is None


def test_split_only_above_the_input_limit(embedding_server):
    texts = [f"text {i}" for i in range(MAX_INPUTS_PER_REQUEST + 1)]
    vectors, cost = fast().embed_sync(texts)
    assert [len(r["body"]["input"]) for r in embedding_server.requests] == [MAX_INPUTS_PER_REQUEST, 1]
    assert vectors.shape == (len(texts), 8)
    assert vectors[-1].tolist() == server_embedding(texts[-1])
    assert cost == pytest.approx(server_tokens(texts) * 0.02 / 1e6, rel=1e-12)

    embedding_server.requests.clear()
    fast().embed_sync(texts[:MAX_INPUTS_PER_REQUEST])
    assert len(embedding_server.requests) == 1


def test_response_order_follows_index(embedding_server):
    embedding_server.script = [{"reverse": True}]
    vectors, _ = fast().embed_sync(["a", "bb", "ccc"])
    assert vectors.tolist() == [server_embedding(t) for t in ["a", "bb", "ccc"]]


def test_non_embeddings_body_is_an_error(embedding_server):
    embedding_server.script = [{"raw": b"<html>proxy login</html>"}]
    with pytest.raises(EmbeddingAPIError, match="not an OpenAI embeddings response"):
        fast().embed_sync(["x"])


def test_prefix_and_unknown_price(embedding_server):
    vectors, cost = fast(model_name="openai:text-embedding-3-small").embed_sync(["a"])
    assert embedding_server.requests[-1]["body"]["model"] == "text-embedding-3-small"
    assert cost > 0
    _, cost = fast(model_name="nomic-embed-text:latest").embed_sync(["a"])
    assert embedding_server.requests[-1]["body"]["model"] == "nomic-embed-text:latest"
    assert cost == 0.0
    _, cost = fast(model_name="my-model", price_per_million=1.0).embed_sync(["a b c"])
    assert cost == pytest.approx(server_tokens(["a b c"]) / 1e6, rel=1e-12)


def test_russian_and_chinese_round_trip_as_utf8(embedding_server):
    texts = ["Сброс пароля через почту", "重置密码", "naïve café"]
    vectors, _ = fast().embed_sync(texts)
    assert embedding_server.requests[0]["body"]["input"] == texts
    assert vectors.tolist() == [server_embedding(t) for t in texts]


def test_zero_vector_gives_zero_similarity(embedding_server):
    metric = ReferenceMatchMetric(references=["", "abc"], aggregation="mean", embedding_provider="openai")
    result = asyncio.run(metric.evaluate(EvalTestCase(input="q", actual_output="abc")))
    assert result["evaluation_log"]["similarities"] == [0.0, 1.0]
    assert result["score"] == pytest.approx(0.5, abs=1e-6)


def test_bad_settings():
    with pytest.raises(ValueError, match="timeout"):
        OpenAIEmbeddingProvider(timeout=0)
    with pytest.raises(ValueError, match="max_retries"):
        OpenAIEmbeddingProvider(max_retries=-1)
    with pytest.raises(ValueError, match="model_name"):
        OpenAIEmbeddingProvider(model_name="")


def test_concurrent_evaluations_overlap_their_requests(embedding_server):
    """asyncio.gather over several metric calls: requests wait on the network side by side."""
    embedding_server.script = [{"sleep": 0.3}] * 6
    metric = ReferenceMatchMetric(references=REFS, embedding_provider="openai")

    async def main():
        return await asyncio.gather(*(metric.evaluate(CASE) for _ in range(6)))

    results = asyncio.run(main())
    assert len(results) == 6 and len(embedding_server.requests) == 6
    assert embedding_server.max_in_flight >= 4
