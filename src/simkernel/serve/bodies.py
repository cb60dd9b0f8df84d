"""Reading and checking request bodies: size and time limits, JSON, and typed fields.

Every check raises :class:`~simkernel.serve.errors.ApiError` with the field, what was wrong and the fix.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from simkernel.serve.errors import ApiError, invalid


async def read_json(request, max_bytes: int, timeout_s: float) -> dict[str, Any]:
    """The JSON object of ``request``'s body: 413 past ``max_bytes`` (from Content-Length or as it
    streams), 408 when it takes over ``timeout_s``, 400 when it is not JSON, 422 when not an object."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(int(declared), max_bytes)
    try:
        raw = await asyncio.wait_for(_read_limited(request, max_bytes), timeout_s)
    except TimeoutError:
        raise ApiError(
            408,
            f"the request body took over {timeout_s:g} s to arrive; send it at once (a client that sends slowly holds a connection)",
            "request_timeout",
        ) from None
    if not raw.strip():
        raise ApiError(
            400,
            "the request body is empty; send a JSON object (Content-Type: application/json)",
            "invalid_json",
        )
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ApiError(
            400,
            f"the request body is not valid JSON ({type(exc).__name__}: {str(exc)[:200]}); send a JSON object encoded in UTF-8",
            "invalid_json",
        ) from None
    if not isinstance(body, dict):
        raise invalid(f"the request body must be a JSON object, got a JSON {json_type(body)}", "invalid_type")
    return body


async def _read_limited(request, max_bytes: int) -> bytes:
    from starlette.requests import ClientDisconnect

    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise _too_large(size, max_bytes)
            chunks.append(chunk)
    except ClientDisconnect:  # nobody reads the answer; 499 (nginx's "client closed request") in the metrics
        raise ApiError(
            499, "the client disconnected before its request body was complete", "client_disconnected"
        ) from None
    return b"".join(chunks)


def _too_large(size: int, max_bytes: int) -> ApiError:
    return ApiError(
        413,
        f"the request body is {size:,} bytes or more, over this server's limit of {max_bytes:,} bytes; send fewer or shorter texts per request (the operator can raise --max-request-bytes)",
        "request_too_large",
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def text(value: Any, where: str) -> str:
    """``value`` as a text (a JSON string with no lone surrogate)."""
    if not isinstance(value, str):
        raise invalid(f"{where} must be a string, got a JSON {json_type(value)}", "invalid_type")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid(
            f"{where} holds a lone UTF-16 surrogate, which is not text; send valid Unicode", "invalid_text"
        ) from None
    return value


def texts(value: Any, where: str, max_inputs: int, allow_empty_list: bool = False) -> list[str]:
    """``value`` as a list of texts (at most ``max_inputs``: 413 past it)."""
    if not isinstance(value, list):
        raise invalid(f"{where} must be an array of strings, got a JSON {json_type(value)}", "invalid_type")
    if not value and not allow_empty_list:
        raise invalid(f"{where} is an empty array; send at least one string", "invalid_value")
    if len(value) > max_inputs:
        raise ApiError(
            413,
            f"{where} holds {len(value):,} items, over this server's limit of {max_inputs:,} per request; split it into several requests (the operator can raise --max-inputs)",
            "too_many_inputs",
        )
    return [text(item, f"{where}[{i}]") for i, item in enumerate(value)]


def required(body: dict[str, Any], name: str, endpoint: str) -> Any:
    if name not in body:
        raise invalid(
            f"{endpoint} needs the field {name!r}; it is missing from the request body", "missing_field"
        )
    return body[name]


def flag(body: dict[str, Any], name: str, default: bool, prefix: str = "") -> bool:
    """The boolean ``body[name]`` (``default`` when absent or null); ``prefix`` names the object it is in
    (``"parameters."``) in the message."""
    value = body.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid(
            f"'{prefix}{name}' must be true or false, got a JSON {json_type(value)}", "invalid_type"
        )
    return value


def number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise invalid(f"{where} must be a finite number, got {str(value)[:60]}", "invalid_type")
    return float(value)


def check_known(body: dict[str, Any], known: tuple[str, ...], endpoint: str) -> None:
    """422 for a field the endpoint does not know (a typo would otherwise be silently ignored)."""
    unknown = [key for key in body if key not in known]
    if unknown:
        raise invalid(
            f"{endpoint} does not take the field(s) {unknown[:5]}; its fields are {list(known)}",
            "unknown_field",
        )
