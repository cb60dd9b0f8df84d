"""The OpenAI-compatible provider against network faults of a real loopback server (tests/fault_http.py):
refused connections, resets mid-body, answers cut short of their Content-Length, servers that stall or
trickle past the timeout, 429 with Retry-After, 500/503, truncated and malformed JSON.

Each fault once, then a good answer: the retry gives the same vectors as a clean call (faults that are
not worth retrying, a 200 whose body is not an embeddings response, are a clear error at once). The
fault on every attempt: an EmbeddingAPIError naming the endpoint and what failed, after exactly
``max_retries + 1`` requests and within ``(max_retries + 1) * timeout`` plus the waits between them.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from metrics_support import server_embedding
from tests.fault_http import FAULTS, refused_port

from simkernel.metrics import EmbeddingAPIError, OpenAIEmbeddingProvider

TIMEOUT_S = 1.0
RETRIES = 2
TEXTS = ["Paris is the capital of France.", "Столица Франции — Париж.", "法国的首都是巴黎。"]
NOT_RETRIED = {"truncated", "malformed"}  # a 200 with a body that is not an embeddings response
SAYS = {
    "reset": "connection failed",
    "short": "broke off before its end",
    "trickle": f"timed out after {TIMEOUT_S:g} s",
    "stall": f"timed out after {TIMEOUT_S:g} s",
    "truncated": "not an OpenAI embeddings response",
    "malformed": "not an OpenAI embeddings response",
    "429": "HTTP 429 after 3 attempts",
    "500": "HTTP 500 after 3 attempts",
    "503": "HTTP 503 after 3 attempts",
}


def provider(**kwargs) -> OpenAIEmbeddingProvider:
    return OpenAIEmbeddingProvider(
        timeout=TIMEOUT_S, max_retries=RETRIES, initial_backoff=0.01, max_backoff=0.02, **kwargs
    )


def bound_s(fault: str) -> float:
    """The longest a call may take: every attempt's timeout, the waits between attempts, 1 s of slack."""
    waits = RETRIES * (0.2 if fault == "429" else 0.02)
    return (RETRIES + 1) * TIMEOUT_S + waits + 1.0


EXPECTED = np.array([server_embedding(t) for t in TEXTS], dtype=np.float64)


@pytest.mark.parametrize("fault", FAULTS)
def test_one_fault_then_a_good_answer(embedding_server, fault):
    embedding_server.script = [{"fault": fault}]
    started = time.monotonic()
    if fault in NOT_RETRIED:
        with pytest.raises(EmbeddingAPIError, match=SAYS[fault]) as info:
            provider().embed_sync(TEXTS)
        assert info.value.status == 200 and embedding_server.url in str(info.value)
        assert len(embedding_server.requests) == 1
        return
    vectors, cost = provider().embed_sync(TEXTS)
    np.testing.assert_array_equal(vectors, EXPECTED)
    assert cost > 0
    assert len(embedding_server.requests) == 2
    assert time.monotonic() - started < bound_s(fault)


@pytest.mark.parametrize("fault", FAULTS)
def test_the_fault_on_every_attempt_is_a_clear_error_in_bounded_time(embedding_server, fault):
    embedding_server.script = [{"fault": fault}] * (RETRIES + 1)
    started = time.monotonic()
    with pytest.raises(EmbeddingAPIError, match=SAYS[fault]) as info:
        provider().embed_sync(TEXTS)
    elapsed = time.monotonic() - started
    assert embedding_server.url in str(info.value)
    assert "\n" not in str(info.value)
    assert len(embedding_server.requests) == (1 if fault in NOT_RETRIED else RETRIES + 1)
    assert elapsed < bound_s(fault), f"{fault}: {elapsed:.2f} s"


def test_refused_connection_is_retried_then_a_clear_error(monkeypatch):
    url = f"http://127.0.0.1:{refused_port()}/v1"
    started = time.monotonic()
    with pytest.raises(EmbeddingAPIError, match=r"could not connect .*gave up after 3 attempt") as info:
        provider(base_url=url, api_key="k").embed_sync(TEXTS)
    assert info.value.status is None and url in str(info.value)
    assert time.monotonic() - started < bound_s("refused")


def test_a_trickling_server_cannot_hold_the_call_past_the_timeout(embedding_server):
    # one byte every 50 ms: every read is quick, so a per-read timeout alone would wait ~25 s here
    embedding_server.script = [{"fault": "trickle"}]
    started = time.monotonic()
    with pytest.raises(EmbeddingAPIError, match="timed out after 0.5 s"):
        OpenAIEmbeddingProvider(timeout=0.5, max_retries=0).embed_sync(TEXTS)
    assert time.monotonic() - started < 1.5
