"""The error contract: every error is OpenAI's JSON shape ``{"error": {"message", "type", "code"}}``.

The message names the problem and the fix. Statuses: 400 malformed JSON, 401 missing or wrong key, 404
model (or path) not served, 405 wrong method, 408 body too slow, 413 body or input count past the
limits, 422 wrong types or values, 503 queue full (with Retry-After). A 500 is only for a fault of the
server itself (a model that fails), never for anything a client sends.
"""

from __future__ import annotations

import json

TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    499: "invalid_request_error",
    503: "server_overloaded",
    500: "server_error",
}
RETRY_AFTER_S = 1


class ApiError(Exception):
    """An error answer: ``status``, ``message`` (the problem and the fix), ``code`` (a short word)."""

    def __init__(self, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = dict(headers or {})


def error_body(status: int, message: str, code: str) -> bytes:
    payload = {
        "error": {"message": message, "type": TYPES.get(status, "invalid_request_error"), "code": code}
    }
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


def queue_full(message: str) -> ApiError:
    """503 for a full batching queue (QueueFullError's message names the setting)."""
    return ApiError(
        503,
        f"the server is busy: {message}; retry after {RETRY_AFTER_S} s (the operator can raise --max-queue)",
        "queue_full",
        {"Retry-After": str(RETRY_AFTER_S)},
    )


def invalid(message: str, code: str = "invalid_value") -> ApiError:
    return ApiError(422, message, code)


async def model_call(awaitable):
    """Await a model call: a full queue is a 503, the library's input errors a 422 (with its message),
    a failure of the model itself a 500."""
    from simkernel.errors import ModelError, QueueFullError

    try:
        return await awaitable
    except QueueFullError as exc:
        raise queue_full(str(exc)) from None
    except ModelError:
        raise  # the server's fault, not the client's: answered 500 by the app
    except (ValueError, TypeError) as exc:
        raise invalid(str(exc)) from None
