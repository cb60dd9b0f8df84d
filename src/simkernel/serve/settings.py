"""The settings of ``simkernel serve`` (from the command line), and the API key."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from simkernel.errors import SimkernelError

API_KEY_ENV = "SIMKERNEL_API_KEY"
DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_INPUTS = 2048  # OpenAI's limit of inputs per embeddings request
DEFAULT_DRAIN_TIMEOUT_S = 30.0
BODY_TIMEOUT_S = 30.0  # a body that takes longer to arrive is answered 408


class ServeSettingsError(SimkernelError, ValueError):
    """A setting of ``simkernel serve`` is unusable; the message names it and the fix."""


@dataclass(frozen=True)
class ServeSettings:
    models: tuple[str, ...]
    precision: str = "fp32"
    host: str = "127.0.0.1"
    port: int = 8080
    api_key: str | None = field(default=None, repr=False)  # never printed
    max_batch_tokens: int | None = None
    max_queue: int | None = None
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_inputs: int = DEFAULT_MAX_INPUTS
    drain_timeout_s: float = DEFAULT_DRAIN_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S


def read_api_key(path: str | None) -> str | None:
    """The key from ``path`` (its first line), else ``$SIMKERNEL_API_KEY``, else None (no key needed)."""
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ServeSettingsError(
                f"cannot read the API key file {path!r} ({type(exc).__name__}: {exc}); give a readable UTF-8 file holding the key on its first line"
            ) from None
        key = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not key:
            raise ServeSettingsError(
                f"the API key file {path!r} is empty; write the key on its first line, or leave out --api-key-file"
            )
        return key
    key = os.environ.get(API_KEY_ENV, "").strip()
    return key or None


def settings_from_args(args) -> ServeSettings:
    """:class:`ServeSettings` from the parsed ``simkernel serve`` arguments."""
    models = tuple(dict.fromkeys(args.model))  # given order, each once
    for name, value in (("--body-timeout", args.body_timeout), ("--drain-timeout", args.drain_timeout)):
        if value <= 0:
            raise ServeSettingsError(f"{name} must be a positive number of seconds, got {value:g}")
    return ServeSettings(
        models=models,
        precision=args.precision,
        host=args.host,
        port=args.port,
        api_key=read_api_key(args.api_key_file),
        max_batch_tokens=args.max_batch_tokens,
        max_queue=args.max_queue,
        max_request_bytes=args.max_request_bytes,
        max_inputs=args.max_inputs,
        drain_timeout_s=args.drain_timeout,
        body_timeout_s=args.body_timeout,
    )
