"""The "openai" embedding provider: a standard-library HTTP client for ``POST {base_url}/embeddings``.

Speaks the OpenAI embeddings protocol, so it also works with compatible servers (vLLM, Ollama,
LiteLLM proxy, Azure-style gateways that accept a bearer token) through ``OPENAI_BASE_URL``.

- Settings: ``api_key`` (else ``$OPENAI_API_KEY``), ``base_url`` (else ``$OPENAI_BASE_URL``, else
  ``https://api.openai.com/v1``), ``organization``/``project`` (else ``$OPENAI_ORG_ID``,
  ``$OPENAI_PROJECT_ID``), read when a request is made, as the OpenAI SDK does. The key is required for
  api.openai.com; a custom ``base_url`` without a key sends no ``Authorization`` header (local servers
  often need none).
- One request per ``embed`` call with ``encoding_format="float"``; inputs are split into several requests
  only above the API's limit of 2,048 inputs per request.
- Cost in US dollars = ``usage.total_tokens`` x price per 1M tokens / 1e6, not rounded (eval_lib rounds each
  call to 6 decimals, which bills a typical 30-token case as $0.000001 or $0 and makes totals over many
  cases wrong); models missing from :data:`PRICES_PER_MILLION_TOKENS` cost 0.0 unless ``price_per_million``
  is given.
- ``timeout`` seconds per attempt, wall clock (a server that trickles its answer is cut off too, see
  :mod:`~simkernel.metrics.embedding_providers.deadline`); ``max_retries`` more attempts after timeouts,
  refused, reset or cut-short connections and HTTP 408, 409, 429 and 5xx, waiting
  ``Retry-After``/``retry-after-ms`` when the server sends one (up to 60 s), else exponential backoff
  ``initial_backoff * 2**attempt`` capped at ``max_backoff``, with jitter. A call therefore ends within
  ``(max_retries + 1) * timeout`` plus the waits between attempts. A 200 whose body is not an
  embeddings response (malformed or truncated JSON) is an error at once, not retried.
- Failures raise :class:`EmbeddingAPIError` with the HTTP status and the server's own message; a missing
  key raises :class:`EmbeddingConfigurationError` saying how to set it.
- Model names: eval_lib accepts ``"openai:text-embedding-3-small"``; that prefix is stripped, and any other
  name is sent verbatim (compatible servers use names such as ``"nomic-embed-text:latest"``).
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import random
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

import numpy as np

from simkernel._version import __version__
from simkernel.errors import SimkernelError
from simkernel.metrics.embedding_providers.base import EmbeddingProvider, run_blocking
from simkernel.metrics.embedding_providers.deadline import Deadline, open_with_deadline

DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_INPUTS_PER_REQUEST = 2048
#: US dollars per 1M input tokens (OpenAI's list prices, the figures eval_lib uses through LiteLLM).
PRICES_PER_MILLION_TOKENS: dict[str, float] = {
    "text-embedding-3-small": 0.02,
    "text-embedding-3-large": 0.13,
    "text-embedding-ada-002": 0.10,
}
_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_RETRY_AFTER_S = 60.0


class EmbeddingConfigurationError(SimkernelError, ValueError):
    """The provider is not configured (no API key); the message says how to configure it."""


class EmbeddingAPIError(SimkernelError, RuntimeError):
    """The embeddings server refused the request, failed, or could not be reached.

    ``status`` is the HTTP status (None for timeouts and connection errors), ``server_message`` what the
    server said, ``url`` the endpoint.
    """

    def __init__(self, message: str, *, status: int | None, server_message: str, url: str) -> None:
        super().__init__(message)
        self.status = status
        self.server_message = server_message
        self.url = url


def _server_message(body: bytes) -> str:
    """The error message inside an OpenAI-style error body (or the body itself, shortened)."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return text[:500] or "(empty response body)"
    if isinstance(payload, dict):
        error = payload.get("error", payload.get("detail", payload.get("message")))
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
        if isinstance(error, str) and error:
            return error[:500]
    return text[:500]


def _retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms``, ``Retry-After`` seconds or HTTP date)."""
    if not headers:
        return None
    wait: float | None = None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            wait = float(value) / 1000.0
        except ValueError:
            wait = None
    if wait is None and (value := headers.get("retry-after")) is not None:
        try:
            wait = float(value)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value) if value.strip() else None
            wait = when.timestamp() - time.time() if when is not None else None
    if wait is None or not 0.0 <= wait <= _MAX_RETRY_AFTER_S:
        return None
    return wait


class OpenAIEmbeddingProvider(EmbeddingProvider):
    """OpenAI (or compatible) embeddings over HTTP; see the module docstring for every setting."""

    def __init__(
        self,
        model_name: str | None = DEFAULT_OPENAI_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        dimensions: int | None = None,
        price_per_million: float | None = None,
        initial_backoff: float = 0.5,
        max_backoff: float = 8.0,
    ) -> None:
        name = DEFAULT_OPENAI_MODEL if model_name is None else model_name
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"model_name must be a non-empty string, got {name!r}")
        self.model_name = name[len("openai:") :] if name.startswith("openai:") else name
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self.api_key = api_key
        self.base_url = base_url
        self.organization = organization
        self.project = project
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.dimensions = dimensions
        self.price_per_million = price_per_million
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)

    # -- settings ---------------------------------------------------------------------------------
    def endpoint(self) -> str:
        """``{base_url}/embeddings`` from the argument, ``$OPENAI_BASE_URL`` or the OpenAI default."""
        base = self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        return base.rstrip("/") + "/embeddings"

    def _headers(self, url: str) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"simkernel/{__version__}",
        }
        key = self.api_key or os.environ.get("OPENAI_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif url.startswith(DEFAULT_BASE_URL):
            raise EmbeddingConfigurationError(
                "The 'openai' embedding provider needs an API key: set the environment variable OPENAI_API_KEY (export OPENAI_API_KEY='sk-...') or pass api_key=...; or use embedding_provider='local' to embed on this machine at no cost."
            )
        organization = self.organization or os.environ.get("OPENAI_ORG_ID")
        project = self.project or os.environ.get("OPENAI_PROJECT_ID")
        if organization:
            headers["OpenAI-Organization"] = organization
        if project:
            headers["OpenAI-Project"] = project
        return headers

    def cost_usd(self, total_tokens: int) -> float:
        """US dollars for ``total_tokens`` input tokens (0.0 for a model without a known price)."""
        price = self.price_per_million
        if price is None:
            price = PRICES_PER_MILLION_TOKENS.get(self.model_name)
        if not price or not total_tokens:
            return 0.0
        return total_tokens * price / 1_000_000

    # -- HTTP -------------------------------------------------------------------------------------
    def _backoff_s(self, attempt: int, headers: Mapping[str, str] | None) -> float:
        asked = _retry_after_s(headers)
        if asked is not None:
            return asked
        return min(self.initial_backoff * 2.0**attempt, self.max_backoff) * (1.0 - 0.25 * random.random())

    def _request(self, inputs: list[str]) -> tuple[list[list[float]], int]:
        """One embeddings request with retries; returns (vectors in input order, total tokens)."""
        url = self.endpoint()
        headers = self._headers(url)
        body: dict[str, Any] = {"model": self.model_name, "input": inputs, "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            retry_headers: Mapping[str, str] | None = None
            with Deadline(self.timeout) as deadline:
                try:
                    raw = open_with_deadline(request, deadline, self.timeout)
                except urllib.error.HTTPError as exc:  # before OSError: it is one
                    status = exc.code
                    try:
                        error_body = exc.read()
                    except (OSError, http.client.HTTPException):  # the error body broke off too
                        error_body = b""
                    retry_headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
                    retryable = status in _RETRY_STATUSES or status >= 500
                    if not retryable or attempt + 1 == attempts:
                        raise self._http_error(
                            status, _server_message(error_body), url, attempt + 1
                        ) from None
                except (OSError, http.client.HTTPException) as exc:  # refused, reset, cut short, timed out
                    if attempt + 1 == attempts:
                        raise self._transport_error(self._what_failed(exc, deadline), url, attempts) from exc
                else:
                    return self._parse(raw, len(inputs), url)
            time.sleep(self._backoff_s(attempt, retry_headers))
        raise AssertionError("unreachable")  # pragma: no cover

    def _what_failed(self, exc: BaseException, deadline: Deadline) -> str:
        """What went wrong with one attempt, in words, for the final error."""
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if deadline.expired or isinstance(reason, (TimeoutError, socket.timeout)):
            return f"timed out after {self.timeout:g} s"
        if isinstance(exc, urllib.error.URLError):
            return f"could not connect ({reason})"
        if isinstance(exc, http.client.IncompleteRead):
            return f"the response broke off before its end ({exc!r})"
        return f"connection failed ({type(exc).__name__}: {exc})"

    def _parse(self, raw: bytes, expected: int, url: str) -> tuple[list[list[float]], int]:
        try:
            payload = json.loads(raw)
            items = sorted(payload["data"], key=lambda item: item.get("index", 0))
            vectors = [item["embedding"] for item in items]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbeddingAPIError(
                f"The embeddings server at {url} answered 200 with a body that is not an OpenAI embeddings response ({type(exc).__name__}: {exc}); check OPENAI_BASE_URL",
                status=200,
                server_message=raw[:500].decode("utf-8", errors="replace"),
                url=url,
            ) from None
        if len(vectors) != expected:
            raise EmbeddingAPIError(
                f"The embeddings server at {url} returned {len(vectors)} embeddings for {expected} inputs",
                status=200,
                server_message="",
                url=url,
            )
        usage = payload.get("usage") or {}
        tokens = usage.get("total_tokens", usage.get("prompt_tokens", 0)) or 0
        return vectors, int(tokens)

    def _http_error(self, status: int, message: str, url: str, attempts: int) -> EmbeddingAPIError:
        hint = {
            401: " Check OPENAI_API_KEY (or api_key=...).",
            403: " The key is not allowed to use this model or endpoint.",
            404: f" Check the model name ({self.model_name!r}) and OPENAI_BASE_URL.",
            429: " Rate limit or quota exceeded.",
        }.get(status, "")
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        return EmbeddingAPIError(
            f"Embeddings request to {url} (model {self.model_name!r}) failed with HTTP {status}{tries}: {message}.{hint}",
            status=status,
            server_message=message,
            url=url,
        )

    def _transport_error(self, what: str, url: str, attempts: int) -> EmbeddingAPIError:
        return EmbeddingAPIError(
            f"Embeddings request to {url} (model {self.model_name!r}) {what}; gave up after {attempts} attempt(s). Raise timeout=/max_retries= or check OPENAI_BASE_URL and the network.",
            status=None,
            server_message="",
            url=url,
        )

    # -- provider API ----------------------------------------------------------------------------
    def embed_sync(self, texts: list[str]) -> tuple[np.ndarray, float]:
        """Blocking ``embed``: ``(len(texts), dim)`` float64 array and the cost in US dollars."""
        texts = list(texts)
        vectors: list[list[float]] = []
        tokens = 0
        for start in range(0, len(texts), MAX_INPUTS_PER_REQUEST):
            chunk_vectors, chunk_tokens = self._request(texts[start : start + MAX_INPUTS_PER_REQUEST])
            vectors.extend(chunk_vectors)
            tokens += chunk_tokens
        array = np.asarray(vectors, dtype=np.float64) if vectors else np.zeros((0, 0), dtype=np.float64)
        return array, self.cost_usd(tokens)

    async def embed(self, texts: list[str]) -> tuple[np.ndarray, float]:
        return await run_blocking(self.embed_sync, texts, pool="io")
