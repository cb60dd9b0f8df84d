"""ONNX models without torch: tokenizer, onnxruntime session, pooling, model store, hub, export.

Three packages by topic, and the names above them:

- :mod:`simkernel.runtime.store`: the model store (its root folder, the bundles in it, their locks,
  manifests and digests); the bottom layer, it imports neither of the two others;
- :mod:`simkernel.runtime.inference`: running a bundle folder (tokenizer, onnxruntime session, pooling,
  config and bundle reading, the encoder cores); it never resolves names and imports only the store;
- :mod:`simkernel.runtime.acquisition`: getting a bundle into the store (registry, hub download, export,
  quantisation, offline preparation, name resolution); it may use inference (parity checks);
- :mod:`simkernel.runtime.encoders` / :mod:`simkernel.runtime.shared`: the public encoders and the
  shared-instance getters, which resolve a model name (acquisition) and load it (inference).

Public names are resolved lazily, so ``import simkernel.runtime`` (and reading a config or the store)
does not import onnxruntime or tokenizers; they load with the first encoder.

- :class:`TextEncoder` / :class:`CrossEncoder`: bi-encoder embeddings and cross-encoder scores that
  match sentence-transformers for the same checkpoint.
- :class:`TokenEncoder` (``TokenEncoder.load(model, precision=...)``): the hidden states per token of a
  chosen layer or of every layer, as BERTScore computes them (:class:`TokenBatch`); the token layers are
  exported into the store on first use.
- :func:`get_text_encoder` / :func:`get_cross_encoder`: process-wide shared instances.
- :func:`read_model_config`, :func:`model_architectures`: what a model is, without loading it.
- :func:`capabilities`: which precisions run on this machine (bf16 needs a CPU with native bf16), and
  why not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simkernel._lazy import lazy_face

_LAZY = {
    "TextEncoder": "simkernel.runtime.encoders",
    "CrossEncoder": "simkernel.runtime.encoders",
    "TokenEncoder": "simkernel.runtime.encoders",
    "TokenBatch": "simkernel.runtime.inference.token_encoder",
    "get_text_encoder": "simkernel.runtime.shared",
    "get_cross_encoder": "simkernel.runtime.shared",
    "get_token_encoder": "simkernel.runtime.shared",
    "clear_shared_instances": "simkernel.runtime.shared",
    "capabilities": "simkernel.runtime.inference.bundle",
    "read_model_config": "simkernel.runtime.inference.config",
    "ModelConfig": "simkernel.runtime.inference.config",
    "model_architectures": "simkernel.runtime.acquisition.resolve",
    "resolve_model": "simkernel.runtime.acquisition.resolve",
}

__all__ = list(_LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.runtime.acquisition.resolve import model_architectures, resolve_model  # noqa: F401
    from simkernel.runtime.encoders import CrossEncoder, TextEncoder, TokenEncoder  # noqa: F401
    from simkernel.runtime.inference.bundle import capabilities  # noqa: F401
    from simkernel.runtime.inference.config import ModelConfig, read_model_config  # noqa: F401
    from simkernel.runtime.inference.token_encoder import TokenBatch  # noqa: F401
    from simkernel.runtime.shared import (  # noqa: F401
        clear_shared_instances,
        get_cross_encoder,
        get_text_encoder,
        get_token_encoder,
    )


__getattr__, __dir__ = lazy_face(__name__, _LAZY, globals())
