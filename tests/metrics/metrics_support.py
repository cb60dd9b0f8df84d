"""Helpers of the metrics tests: eval_lib's formula written out, an encoder spy, and a real
OpenAI-protocol embeddings server (http.server in a thread on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from tests.fault_http import send_fault

SERVER_KEY = "sk-test-loopback"
SERVER_DIM = 8


def eval_lib_formula(embeddings: np.ndarray, aggregation: str) -> tuple[float, list[float]]:
    """eval_lib 0.8.2's ReferenceMatchMetric arithmetic, written out: row 0 against rows 1.., float64."""
    rows = [np.array(r.tolist()) for r in embeddings]  # eval_lib: .tolist() then np.array (float64)
    a, norm_a = rows[0], np.linalg.norm(rows[0])
    sims = []
    for r in rows[1:]:
        norm_r = np.linalg.norm(r)
        sim = 0.0 if norm_a == 0 or norm_r == 0 else float(np.dot(a, r) / (norm_a * norm_r))
        sims.append(max(0.0, min(1.0, sim)))
    score = max(sims) if aggregation == "max" else float(np.mean(sims))
    return score, sims


class EncoderSpy:
    """Wraps a TextEncoder and records every list of texts handed to ``encode`` or ``aencode``."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.calls: list[list[str]] = []

    def encode(self, texts, batch_size: int = 32, normalize: bool = True):
        texts = list(texts)
        self.calls.append(texts)
        return self.encoder.encode(texts, batch_size=batch_size, normalize=normalize)

    async def aencode(self, texts, batch_size: int = 32, normalize: bool = True):
        texts = list(texts)
        self.calls.append(texts)
        return await self.encoder.aencode(texts, batch_size=batch_size, normalize=normalize)


# ----------------------------------------------------------------------------------------------------
# A real embeddings server speaking the OpenAI protocol on 127.0.0.1
# ----------------------------------------------------------------------------------------------------


def server_embedding(text: str) -> list[float]:
    """The loopback server's "model": character-code histogram in SERVER_DIM buckets (zero for "")."""
    vector = [0.0] * SERVER_DIM
    for ch in text:
        vector[ord(ch) % SERVER_DIM] += 1.0 + (ord(ch) % 7) / 10.0
    return vector


def server_tokens(texts: list[str]) -> int:
    """Tokens the loopback server bills: whitespace-separated words plus one per input."""
    return sum(len(t.split()) + 1 for t in texts)


@dataclass
class EmbeddingServer:
    """State of the loopback server: scripted answers (consumed one per authorised request) and a log.

    An answer is a dict: ``status`` (and ``message``, ``headers``), ``sleep`` seconds before answering,
    ``raw`` body bytes, ``reverse`` (data in reverse order), or ``fault`` (one of
    :data:`tests.fault_http.FAULTS`, sent instead of the correct answer)."""

    url: str
    script: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0


def _handler_for(state: EmbeddingServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode("utf-8"))
            with state.lock:
                state.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                        "t": time.monotonic(),
                    }
                )
                authorised = self.headers.get("Authorization") == f"Bearer {SERVER_KEY}"
                action = state.script.pop(0) if (authorised and state.script) else {}
            if self.path != "/v1/embeddings":
                self._send(
                    404, {"error": {"message": f"Unknown path {self.path}", "type": "invalid_request_error"}}
                )
                return
            if not authorised:
                self._send(
                    401,
                    {
                        "error": {
                            "message": "Incorrect API key provided: sk-wr***ng.",
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    },
                )
                return
            with state.lock:
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            time.sleep(action.get("sleep", 0.0))
            with state.lock:
                state.in_flight -= 1
            status = action.get("status", 200)
            if status != 200:
                self._send(
                    status,
                    {
                        "error": {
                            "message": action.get("message", f"scripted {status}"),
                            "type": "server_error",
                        }
                    },
                    action.get("headers"),
                )
                return
            if "raw" in action:
                self._send(200, action["raw"])
                return
            inputs = body["input"]
            data = [
                {"object": "embedding", "index": i, "embedding": server_embedding(t)}
                for i, t in enumerate(inputs)
            ]
            if action.get("reverse"):
                data.reverse()
            tokens = server_tokens(inputs)
            payload = {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
            if "fault" in action:  # a network fault instead of this answer (tests/fault_http.py)
                send_fault(self, action["fault"], json.dumps(payload).encode("utf-8"))
                return
            self._send(200, payload)

    return Handler


def start_server() -> tuple[EmbeddingServer, ThreadingHTTPServer]:
    """Start the loopback server on a random port; returns its state and the server (to shut down)."""
    state = EmbeddingServer(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return state, server
