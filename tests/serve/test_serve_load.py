"""The server under sustained load and at shutdown: 20,000 requests on a keep-alive client with the
server's RSS and open fds flat (read from /proc), and SIGTERM under 64 concurrent clients: every
request the server accepted is answered (the clients' 200s equal the server's count), exit status 0
within the drain timeout."""

from __future__ import annotations

import asyncio
import re
import signal
import time

import httpx
from serve_support import CONTRACT_TYPES, CROSS_MODEL, DEFAULT_MODEL, ServerProcess

REQUESTS = 20_000
WARM_UP = 2_000
TIME_BUDGET_S = 240.0  # on a slower or busier machine the test measures what it sent in this time
MIN_REQUESTS = 5_000
RSS_GROWTH_KB = 20 * 1024


def _bodies(i: int) -> tuple[str, dict]:
    """Small requests over every endpoint; embeddings cycle over 500 texts (the cache's size stays
    fixed), rerank and SAS run the models each time."""
    kind = i % 4
    if kind == 0:
        return "/v1/embeddings", {"model": DEFAULT_MODEL, "input": f"text {i % 500}"}
    if kind == 1:
        return "/similarity", {"inputs": {"source_sentence": f"text {i % 500}", "sentences": ["a", "b"]}}
    if kind == 2:
        return "/rerank", {"query": "capital", "texts": ["Paris", f"Lyon {i % 7}"], "model": CROSS_MODEL}
    return "/v1/sas", {"ground_truth_answers": ["Berlin"], "predicted_answers": [f"Berlin {i % 9}"]}


def test_20000_requests_keep_rss_and_fds_flat():
    process = ServerProcess("--model", DEFAULT_MODEL, "--model", CROSS_MODEL)
    try:
        with httpx.Client(base_url=process.url, trust_env=False, timeout=60) as http:
            for i in range(WARM_UP):
                path, body = _bodies(i)
                assert http.post(path, json=body).status_code == 200
            rss_before, fds_before = process.rss_kb(), process.fds()
            started = time.monotonic()
            sent = 0
            while sent < REQUESTS and time.monotonic() - started < TIME_BUDGET_S:
                path, body = _bodies(sent)
                response = http.post(path, json=body)
                assert response.status_code == 200, response.text
                sent += 1
            elapsed = time.monotonic() - started
            rss_after, fds_after = process.rss_kb(), process.fds()
    finally:
        status, stderr = process.stop()
    print(
        f"\n{sent} requests in {elapsed:.1f} s ({sent / elapsed:.0f}/s): RSS {rss_before / 1024:.1f} -> "
        f"{rss_after / 1024:.1f} MiB, fds {fds_before} -> {fds_after}"
    )
    assert status == 0, stderr
    assert sent >= MIN_REQUESTS, f"only {sent} requests in {TIME_BUDGET_S} s"
    assert rss_after - rss_before <= RSS_GROWTH_KB, (rss_before, rss_after)
    assert fds_after <= fds_before + 2, (fds_before, fds_after)


def test_sigterm_under_64_clients_answers_every_accepted_request_and_exits_0():
    process = ServerProcess("--model", DEFAULT_MODEL, "--drain-timeout", "30")
    answered = 0
    failures: list[str] = []
    finished: list[float] = []

    async def client(http: httpx.AsyncClient, n: int) -> None:
        nonlocal answered
        for i in range(100_000):
            texts = [f"client {n} request {i} text {k}" for k in range(4)]
            try:
                response = await http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": texts})
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
                failures.append(type(exc).__name__)
                return  # refused, or closed unanswered: the server counts only what it accepted
            assert response.status_code == 200, response.text
            answered += 1
            finished.append(time.monotonic())

    async def load() -> float:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        async with httpx.AsyncClient(
            base_url=process.url, trust_env=False, timeout=60, limits=limits
        ) as http:
            tasks = [asyncio.create_task(client(http, n)) for n in range(64)]
            await asyncio.sleep(3.0)
            assert answered > 64, "the load never got going"
            process.signal(signal.SIGTERM)
            stopped = time.monotonic()
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
            return stopped

    try:
        sigterm_at = asyncio.run(load())
        status = process.wait(60)
        exit_s = time.monotonic() - sigterm_at
    finally:
        if process.alive():
            process.stop()
    stderr = process.stderr()
    report = re.search(r"(\d+) requests accepted, (\d+) answered", stderr)
    assert report, stderr
    accepted, server_answered = int(report[1]), int(report[2])
    print(
        f"\n{answered} answered, SIGTERM to exit {exit_s:.2f} s, client errors after it: {sorted(set(failures))}"
    )
    assert status == 0, stderr
    assert accepted == server_answered == answered, (accepted, server_answered, answered)
    assert any(t > sigterm_at for t in finished), "no request was in flight at SIGTERM: nothing drained"
    assert exit_s < 30


def test_a_drain_timeout_that_cuts_requests_short_is_a_503_in_their_shape_exit_1_and_counted():
    """The drain report is not a formality: requests still running when --drain-timeout ends are
    cancelled, counted as accepted but not answered, and the exit status says so. Their clients get a 503
    with Retry-After in the route's protocol (OpenAI's error on /v1/embeddings, TEI's on /embed), not
    uvicorn's plain-text 500."""
    process = ServerProcess("--model", DEFAULT_MODEL, "--drain-timeout", "0.5")
    texts = [f"long request {i} " + "words of a long answer " * 40 for i in range(2048)]

    async def long_requests() -> list:
        async with httpx.AsyncClient(base_url=process.url, trust_env=False, timeout=120) as http:
            calls = [
                asyncio.create_task(
                    http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": texts})
                ),
                asyncio.create_task(http.post("/embed", json={"inputs": [f"TEI {t}" for t in texts]})),
            ]
            await asyncio.sleep(1.5)  # the requests are accepted and their passes are running
            process.signal(signal.SIGTERM)
            return await asyncio.gather(*calls)

    try:
        openai_cut, tei_cut = asyncio.run(long_requests())
        status = process.wait(60)
    finally:
        if process.alive():
            process.stop()
    stderr = process.stderr()
    assert "2 requests accepted, 0 answered" in stderr, stderr
    assert status == 1, stderr
    for response in (openai_cut, tei_cut):
        assert response.status_code == 503, response.text
        assert response.headers["content-type"] == "application/json"
        assert response.headers["retry-after"] == "1"
    error = openai_cut.json()["error"]
    assert set(error) == {"message", "type", "code"} and error["type"] == CONTRACT_TYPES[503], error
    assert error["code"] == "shutting_down" and "--drain-timeout" in error["message"], error
    tei = tei_cut.json()
    assert set(tei) == {"error", "error_type"} and tei["error_type"] == "unhealthy", tei
    assert "--drain-timeout" in tei["error"], tei
