"""ONNX models without torch: tokenizer, onnxruntime session, pooling, model store, hub, export.

Public names are resolved lazily, so ``import simkernel.runtime`` (and reading a config or the store)
does not import onnxruntime or tokenizers; they load with the first encoder.

- :class:`TextEncoder` / :class:`CrossEncoder`: bi-encoder embeddings and cross-encoder scores that
  match sentence-transformers for the same checkpoint.
- :func:`get_text_encoder` / :func:`get_cross_encoder`: process-wide shared instances.
- :func:`read_model_config`, :func:`model_architectures`: what a model is, without loading it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "TextEncoder": "simkernel.runtime.text_encoder",
    "CrossEncoder": "simkernel.runtime.cross_encoder",
    "get_text_encoder": "simkernel.runtime.shared",
    "get_cross_encoder": "simkernel.runtime.shared",
    "clear_shared_instances": "simkernel.runtime.shared",
    "read_model_config": "simkernel.runtime.config",
    "ModelConfig": "simkernel.runtime.config",
    "model_architectures": "simkernel.runtime.resolve",
    "resolve_model": "simkernel.runtime.resolve",
}

__all__ = list(_LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.runtime.config import ModelConfig, read_model_config  # noqa: F401
    from simkernel.runtime.cross_encoder import CrossEncoder  # noqa: F401
    from simkernel.runtime.resolve import model_architectures, resolve_model  # noqa: F401
    from simkernel.runtime.shared import clear_shared_instances, get_cross_encoder, get_text_encoder  # noqa: F401
    from simkernel.runtime.text_encoder import TextEncoder  # noqa: F401


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'simkernel.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
