"""What the Haystack embedders and ranker share with simkernel's other adapters: the tool import with an
install hint, the checks of ``model`` / ``precision`` / ``threads``, and the process-wide shared encoder.

Defined here, in the components layer, because :mod:`simkernel.components.embedders` and
:mod:`simkernel.components.rankers` use them; :mod:`simkernel.integrations._common` re-exports them for the
adapters above. Nothing here imports a tool or a model until called.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from simkernel._optional import import_optional
from simkernel.scoring.settings import (
    DEFAULT_MODEL,
    PRECISIONS,
    check_model,
    check_precision_name,
    check_threads,
)

__all__ = ["PRECISIONS", "check_settings", "require", "shared_encoder"]


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
