"""The ASGI middleware in front of every route: the API key, request counting and metrics, and the
last-resort 500 (a fault of the server, never of a client, in OpenAI's error shape; TEI's on TEI's
routes, where it is TEI's 424), and the 503 (with Retry-After, in the route's shape) of a request that the
drain timeout cut short before its answer began.

The key is compared with :func:`hmac.compare_digest` (no timing leak) and never logged or echoed.
``/health``, ``/ready`` and ``GET /`` (TEI's health probe) need no key. ``accepted`` and ``answered`` count the requests this
server began and those whose answer it sent to its last byte, for the drain report at shutdown.
"""

from __future__ import annotations

import asyncio
import hmac
import sys
import time
import traceback

from simkernel.serve.errors import RETRY_AFTER_S, TEI_PATHS, error_body, tei_error

OPEN_PATHS = ("/health", "/ready")


class ServeMiddleware:
    def __init__(self, app, api_key: str | None, metrics) -> None:
        self.app = app
        self._key = api_key.encode("utf-8") if api_key else None
        self.metrics = metrics
        self.accepted = 0
        self.answered = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.accepted += 1
        start = time.perf_counter()
        path = scope.get("path", "")
        status = {"code": 500, "started": False}

        async def tracked_send(message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                status["started"] = True
            await send(message)
            # the last byte is out (a request cancelled by the drain timeout never gets here)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                self.answered += 1

        try:
            refusal = self._refusal(scope)
            if refusal is not None:
                await self._error(tracked_send, 401, refusal, "invalid_api_key", path)
            else:
                await self.app(scope, receive, tracked_send)
        except Exception:  # a fault of the server: the client gets a 500 in the contract's shape
            print("simkernel serve: internal error\n" + traceback.format_exc(), file=sys.stderr)
            if not status["started"]:
                await self._error(
                    tracked_send,
                    500,
                    "the server failed while answering (a fault of the server, not of the request); retry, and report it if it persists",
                    "internal_error",
                    path,
                )
        except asyncio.CancelledError:
            # the drain timeout (uvicorn's timeout_graceful_shutdown) cancelled this request: the client
            # gets a 503 in the route's shape rather than uvicorn's plain-text 500; it is sent past
            # tracked_send, so the drain report does not count the request as answered
            if not status["started"]:
                status["code"] = 503
                await self._error(
                    send,
                    503,
                    "the server is shutting down and its drain timeout (--drain-timeout) ended before this request was answered; send it again (to another instance of the service, or once the server is back)",
                    "shutting_down",
                    path,
                    {"Retry-After": str(RETRY_AFTER_S)},
                )
            raise
        finally:
            self.metrics.observe(path, scope.get("method", ""), status["code"], time.perf_counter() - start)

    def _refusal(self, scope) -> str | None:
        path = scope.get("path")
        if self._key is None or path in OPEN_PATHS or (path == "/" and scope.get("method") == "GET"):
            return None  # probes (TEI's GET / among them) need no key
        header = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                header = value
                break
        if not header:
            return "this server needs an API key: send the header 'Authorization: Bearer <key>' (the operator's --api-key-file or SIMKERNEL_API_KEY)"
        scheme, _, given = header.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self._key):
            return "the API key is wrong: send the header 'Authorization: Bearer <key>' with the key this server was started with"
        return None

    @staticmethod
    async def _error(
        send, status: int, message: str, code: str, path: str, extra: dict[str, str] | None = None
    ) -> None:
        if path in TEI_PATHS:  # TEI's routes answer in TEI's shape
            status, body = tei_error(status, message, code)
        else:
            body = error_body(status, message, code)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        headers += [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in (extra or {}).items()
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
