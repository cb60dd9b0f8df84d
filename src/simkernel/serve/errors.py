"""The error contract: OpenAI's JSON shape ``{"error": {"message", "type", "code"}}`` on the OpenAI and
simkernel routes, text-embeddings-inference's ``{"error": message, "error_type": type}`` on TEI's.

The message names the problem and the fix. Statuses: 400 malformed JSON (and, on /v1/embeddings, an empty
input), 401 missing or wrong key, 404 model (or path) not served, 405 wrong method, 408 body too slow, 413
body or input count past the limits, 422 wrong types or values, 503 queue full or a request cut short by
the drain timeout at shutdown (with Retry-After; the latter from :mod:`simkernel.serve.middleware`). A 500
is only for a fault of the server itself (a model that fails), never for anything a client sends.

TEI's routes answer with TEI's statuses (:func:`tei_error`): 400 ``empty`` for an empty input, 422
``validation`` for wrong types or values and for more inputs than ``max_client_batch_size``, 413 for a
body past the byte limit, 429 ``overloaded`` for a full queue (with Retry-After), 424 ``backend`` for a
fault of the model, and 401/404/405/408 as above (TEI answers those with no body; here ``error_type``
names them: ``unauthorized``, ``not_found``, ``validation``).
"""

from __future__ import annotations

import json
import sys

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
# the paths of text-embeddings-inference's API (simkernel.serve.routes_tei): their errors are in TEI's shape
TEI_PATHS = frozenset({"/", "/embed", "/predict", "/rerank", "/similarity", "/tokenize", "/decode", "/info"})
# TEI's ErrorType (router/src/lib.rs) of each status; 401 and 404 have none there (TEI answers no body)
TEI_TYPES = {
    400: "validation",
    401: "unauthorized",
    404: "not_found",
    413: "validation",
    422: "validation",
    424: "backend",
    429: "overloaded",
    503: "unhealthy",
}
# our codes whose TEI status differs from the OpenAI one: (TEI status, TEI error_type)
TEI_STATUS_OF_CODE = {
    "empty": (400, "empty"),
    "too_many_inputs": (422, "validation"),  # TEI: "batch size N > maximum allowed batch size M"
    "queue_full": (429, "overloaded"),
    "model_error": (424, "backend"),
    "no_model_of_kind": (424, "backend"),  # TEI: "Model is not a classifier model" and the like
    "internal_error": (424, "backend"),
}


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


def tei_error(status: int, message: str, code: str) -> tuple[int, bytes]:
    """(status, body) of an error on a TEI route: TEI's status for it and TEI's shape."""
    status, error_type = TEI_STATUS_OF_CODE.get(code, (status, TEI_TYPES.get(status, "validation")))
    payload = {"error": message, "error_type": error_type}
    return status, json.dumps(payload, ensure_ascii=False).encode("utf-8")


def empty_input(message: str) -> ApiError:
    """An empty input (an empty string or array): 400 on both protocols (TEI's ``empty``)."""
    return ApiError(400, message, "empty")


def queue_full(model: str | None, max_queue: int | None) -> ApiError:
    """503 for a full batching queue, told in the client's terms: the served model's id and the server's
    option (the library's message, with the model's path and its Python settings, goes to the log)."""
    whose = f"the model {model!r}" if model else "a model of this server"
    limit = f" (--max-queue {max_queue})" if max_queue is not None else ""
    return ApiError(
        503,
        f"the server is busy: the queue of calls waiting for a forward pass of {whose} is full{limit}; retry after {RETRY_AFTER_S} s, or send fewer requests at once (the operator can raise --max-queue)",
        "queue_full",
        {"Retry-After": str(RETRY_AFTER_S)},
    )


def invalid(message: str, code: str = "invalid_value") -> ApiError:
    return ApiError(422, message, code)


async def model_call(awaitable, model: str | None):
    """Await a call of the served model ``model`` (its id; None for a metric's own): a full queue is a 503,
    the library's input errors a 422 (with its message), a failure of the model itself a 500."""
    from simkernel.errors import ModelError, QueueFullError

    try:
        return await awaitable
    except QueueFullError as exc:
        print(f"simkernel serve: a request refused: {exc}", file=sys.stderr)
        raise queue_full(model, exc.max_queue) from None
    except ModelError:
        raise  # the server's fault, not the client's: answered 500 by the app
    except (ValueError, TypeError) as exc:
        raise invalid(str(exc)) from None
