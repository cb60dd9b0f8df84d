"""What the adapters share: the tool import with an install hint, the shared encoder, the checks."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from simkernel._optional import import_optional
from simkernel.scoring.settings import DEFAULT_MODEL, check_model, check_precision_name, check_threads


def require(module: str, extra: str, adapter: str) -> ModuleType:
    """``module`` of the tool, or MissingDependencyError naming ``pip install 'simkernel[extra]'``."""
    return import_optional(module, extra, f"simkernel's {adapter} adapter")


def check_settings(model: Any, precision: Any, threads: Any) -> None:
    """ValueError naming the bad value, at construction (before any model is loaded)."""
    if not isinstance(model, str):  # a path-like is not a model id here: the tools pass strings
        raise ValueError(f"model must be a model id or a path (a non-empty string), got {model!r}")
    check_model(model)
    check_precision_name(precision)
    check_threads(threads)


def shared_encoder(model: str = DEFAULT_MODEL, precision: str = "fp32", threads: int | None = None) -> Any:
    """The process-wide :class:`~simkernel.runtime.TextEncoder` for these settings (loaded once)."""
    from simkernel.runtime.shared import get_text_encoder

    return get_text_encoder(model, precision=precision, threads=threads)


def embed(encoder: Any, texts: list[str], batch_size: int, normalize: bool) -> list[list[float]]:
    """One vector per text, in order, from ONE encoder call for the whole list, as lists of Python floats
    (what the tools' embedding APIs return)."""
    return encoder.encode(texts, batch_size=batch_size, normalize=normalize).tolist()


async def aembed(encoder: Any, texts: list[str], batch_size: int, normalize: bool) -> list[list[float]]:
    """:func:`embed` awaited on the encoder's ``aencode`` (shared passes; the event loop is never blocked)."""
    return (await encoder.aencode(texts, batch_size=batch_size, normalize=normalize)).tolist()
