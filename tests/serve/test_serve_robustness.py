"""Clients that misbehave: slow senders, bodies that stall, clients that disconnect mid-request,
bodies far past the limit. The server answers the others meanwhile, frees what the bad ones held, and
never prints an internal error."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest
from serve_support import DEFAULT_MODEL, ServerProcess


@pytest.fixture(scope="module")
def plain():
    """A server with no key, a 2 s body timeout and a 64 KiB body limit."""
    process = ServerProcess("--model", DEFAULT_MODEL, "--body-timeout", "2", "--max-request-bytes", "65536")
    try:
        yield process
    finally:
        status, stderr = process.stop()
        assert "internal error" not in stderr, stderr
        assert status == 0, stderr


def raw_request(
    port: int, body: bytes, content_length: int | None = None, path: str = "/v1/embeddings"
) -> bytes:
    length = len(body) if content_length is None else content_length
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    return head.encode() + body


def read_response(sock: socket.socket, timeout: float = 30.0) -> bytes:
    """The whole response: its head, then the Content-Length bytes of its body."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data or len(data) < _expected_size(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _expected_size(data: bytes) -> int:
    head, _, _ = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(head) + 4 + int(line.split(b":")[1])
    return 0


def test_a_slow_sender_is_answered_and_does_not_hold_up_others(plain):
    body = b'{"model": "%s", "input": ["sent one byte at a time"]}' % DEFAULT_MODEL.encode()
    request = raw_request(plain.port, body)
    result: dict[str, bytes] = {}

    def slow() -> None:
        with socket.create_connection(("127.0.0.1", plain.port)) as sock:
            for i in range(0, len(request), 4):
                sock.sendall(request[i : i + 4])
                time.sleep(0.03)  # ~1 s for the whole request, under the 2 s body timeout
            result["slow"] = read_response(sock)

    thread = threading.Thread(target=slow)
    thread.start()
    with httpx.Client(base_url=plain.url, trust_env=False) as http:
        started = time.monotonic()
        for _ in range(10):
            assert (
                http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": "fast"}).status_code == 200
            )
        fast_s = time.monotonic() - started
    thread.join(30)
    assert not thread.is_alive()
    assert result["slow"].startswith(b"HTTP/1.1 200"), result["slow"][:200]
    assert fast_s < 1.0, f"10 fast requests took {fast_s:.2f} s beside a slow sender"


def test_a_stalled_body_is_408_after_the_body_timeout(plain):
    with socket.create_connection(("127.0.0.1", plain.port)) as sock:
        sock.sendall(raw_request(plain.port, b'{"model": ', content_length=200))
        started = time.monotonic()
        answer = read_response(sock, timeout=20)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b"request_timeout" in answer
    assert 1.5 < waited < 10, waited


def test_a_declared_huge_body_is_refused_before_it_is_sent(plain):
    with socket.create_connection(("127.0.0.1", plain.port)) as sock:
        sock.sendall(raw_request(plain.port, b"", content_length=10**10))
        answer = read_response(sock, timeout=10)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]


def test_a_streamed_body_past_the_limit_is_413_without_reading_it_all(plain):
    """A chunked body (no Content-Length) that goes one byte past the 64 KiB limit and never ends: the server
    answers 413 in the contract's shape as soon as the limit is passed, without waiting for the rest (the
    client never sends the last chunk). The client sends nothing more after the byte past the limit, so the
    server has read everything it was sent: the answer arrives whole, never a dropped connection."""
    limit = 65536
    head = (
        b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", plain.port)) as sock:
        sock.sendall(head)
        for _ in range(limit // 8192):  # exactly the limit: not yet past it
            sock.sendall(b"2000\r\n" + b"[" * 8192 + b"\r\n")
        sock.sendall(b"1\r\n[\r\n")  # one byte past the limit; the body is never finished
        answer = read_response(sock, timeout=30)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    error = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "request_too_large", error
    assert f"{limit + 1:,} bytes or more" in error["message"], error
    assert plain.alive()


def test_clients_that_disconnect_mid_request_leave_the_server_serving(plain):
    texts = [f"a text {i} of a request whose client has gone" for i in range(300)]
    big = b'{"model": "%s", "input": %s}' % (DEFAULT_MODEL.encode(), str(texts).replace("'", '"').encode())
    assert len(big) < 65536
    fds_before = plain.fds()
    for i in range(20):
        with socket.create_connection(("127.0.0.1", plain.port)) as sock:
            request = raw_request(plain.port, big)
            if i % 2:
                sock.sendall(request[: len(request) // 2])  # half a body, then gone
            else:
                sock.sendall(request)  # a whole request, gone before the answer
    with httpx.Client(base_url=plain.url, trust_env=False, timeout=60) as http:
        for _ in range(5):
            assert (
                http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": "after"}).status_code
                == 200
            )
    deadline = time.monotonic() + 60
    while plain.fds() > fds_before + 2 and time.monotonic() < deadline:
        time.sleep(0.2)  # the abandoned requests finish their passes, their sockets close
    assert plain.fds() <= fds_before + 2
    assert "internal error" not in plain.stderr()


def test_the_work_of_a_client_that_disconnected_is_dropped_from_the_queue():
    """A request of 2,048 texts run 256 tokens a pass takes dozens of passes; its client leaves after
    the first ones: the texts not yet in a pass are never run (the batcher's counter stops far short)."""
    process = ServerProcess("--model", DEFAULT_MODEL, "--max-batch-tokens", "256")
    texts = [
        f"text {i} of a request that nobody will read, long enough to take some tokens" for i in range(2048)
    ]
    body = json.dumps({"model": DEFAULT_MODEL, "input": texts}).encode()
    try:
        with httpx.Client(base_url=process.url, trust_env=False, timeout=30) as http:
            before = pass_texts(http)
            with socket.create_connection(("127.0.0.1", process.port)) as sock:
                sock.sendall(raw_request(process.port, body))
                deadline = time.monotonic() + 30
                while pass_texts(http) == before:  # the request's passes have started
                    assert time.monotonic() < deadline, "the request never started"
                    time.sleep(0.05)
            time.sleep(1.0)  # the server sees the disconnect; at most the running pass finishes
            settled = pass_texts(http)
            time.sleep(1.0)
            assert pass_texts(http) == settled, "the abandoned request's passes kept running"
            assert settled - before < len(texts) / 2, (before, settled)
            assert (
                http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": "next"}).status_code == 200
            )
    finally:
        status, stderr = process.stop()
    assert status == 0 and "internal error" not in stderr, stderr


def pass_texts(http: httpx.Client) -> float:
    for line in http.get("/metrics").text.splitlines():
        if line.startswith("simkernel_pass_texts_total{"):
            return float(line.split()[-1])
    return 0.0


@pytest.fixture(scope="module")
def default_limits():
    """A server with the default body limit (4 MiB) and no key."""
    process = ServerProcess("--model", DEFAULT_MODEL)
    try:
        yield process
    finally:
        status, stderr = process.stop()
        assert status == 0 and "internal error" not in stderr, stderr


def big_texts(count: int, chars: int) -> list[str]:
    words = ["alpha", "beta", "gamma", "дельта", "数据", "Paris", "capital"]
    return [
        " ".join(words[(i + k) % 7] + str(k % 13) for k in range(chars // 8))[:chars] for i in range(count)
    ]


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        # a row per token: an answer of some 60 MB
        ("/tokenize", {"inputs": big_texts(2000, 1500)}, 200),
        # every text tokenized to find that one is too long for truncate false
        ("/embed", {"inputs": big_texts(2000, 1500), "truncate": False}, 422),
    ],
)
def test_health_answers_while_a_big_request_is_tokenized(default_limits, path, body, status):
    """The tokenizing and the JSON of a big request run off the event loop: /health, polled meanwhile on
    another connection, keeps answering, each time in a small part of the big request's own time (when
    the loop did that work, one /health waited for nearly all of it)."""
    raw = json.dumps(body, ensure_ascii=False).encode("utf-8")
    assert len(raw) < 4 * 1024 * 1024
    result: dict = {}

    def big() -> None:
        with httpx.Client(base_url=default_limits.url, trust_env=False, timeout=300) as http:
            started = time.monotonic()
            response = http.post(path, content=raw, headers={"Content-Type": "application/json"})
            result["seconds"] = time.monotonic() - started
            result["response"] = response

    with httpx.Client(base_url=default_limits.url, trust_env=False, timeout=300) as health:
        health.get("/health").raise_for_status()
        thread = threading.Thread(target=big)
        thread.start()
        waits = []
        while thread.is_alive():
            started = time.monotonic()
            assert health.get("/health").status_code == 200
            waits.append(time.monotonic() - started)
            time.sleep(0.01)
        thread.join()
    response, seconds = result["response"], result["seconds"]
    print(f"\n{path}: {seconds:.2f} s, {len(waits)} /health answers, the longest {max(waits):.3f} s")
    assert response.status_code == status, response.text[:300]
    if status == 200:
        rows = response.json()
        assert len(rows) == len(body["inputs"]) and sum(len(r) for r in rows) > 500_000
    assert seconds > 0.5, f"the big request took {seconds:.2f} s: too little to tell a stalled loop"
    assert len(waits) >= 5, (len(waits), seconds)
    assert max(waits) < seconds / 4, f"/health waited {max(waits):.2f} s during a {seconds:.2f} s {path}"
