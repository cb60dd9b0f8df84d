"""Embedding providers of the vector metrics: "local" (ONNX, shared model) and "openai" (HTTP).

:func:`get_embedding_provider` maps eval_lib's ``embedding_provider``/``model_name`` arguments to one.
"""

from __future__ import annotations

from simkernel.metrics.embedding_providers.base import EmbeddingProvider
from simkernel.metrics.embedding_providers.local import LocalEmbeddingProvider, resolve_local_model_id
from simkernel.metrics.embedding_providers.openai import (
    EmbeddingAPIError,
    EmbeddingConfigurationError,
    OpenAIEmbeddingProvider,
)

__all__ = [
    "EmbeddingAPIError",
    "EmbeddingConfigurationError",
    "EmbeddingProvider",
    "LocalEmbeddingProvider",
    "OpenAIEmbeddingProvider",
    "get_embedding_provider",
    "resolve_local_model_id",
]


def get_embedding_provider(
    provider: str | EmbeddingProvider, model_name: str | None = None, cache_dir=None
) -> EmbeddingProvider:
    """The provider for ``provider`` ("openai" or "local", or an :class:`EmbeddingProvider` instance,
    returned as is), with ``model_name`` or the provider's default model.

    An unknown name raises eval_lib's ``ValueError``:
    ``"Unknown embedding provider: <name>. Use 'openai' or 'local'."``.
    """
    if cache_dir is not None and provider != "local":
        raise ValueError(
            f"cache_dir applies to embedding_provider='local' only, not {provider!r}; give an EmbeddingProvider instance its own cache, or drop cache_dir"
        )
    if isinstance(provider, EmbeddingProvider):
        return provider
    if provider == "openai":
        return OpenAIEmbeddingProvider(model_name)
    if provider == "local":
        return LocalEmbeddingProvider(model_name, cache_dir=cache_dir)
    raise ValueError(f"Unknown embedding provider: {provider}. Use 'openai' or 'local'.")
