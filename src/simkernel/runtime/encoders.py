"""``TextEncoder``, ``CrossEncoder`` and ``TokenEncoder``: the public encoders, which take a model name or a folder.

Each resolves ``model=`` to a bundle folder (:func:`simkernel.runtime.acquisition.resolve.resolve_model`:
a local bundle, a local checkpoint exported on first use, the store, or the Hugging Face hub), then
loads it with its core in :mod:`simkernel.runtime.inference`, which only ever reads a bundle folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
from simkernel.runtime.acquisition.resolve import resolve_model
from simkernel.runtime.acquisition.token_layers import resolve_token_layers
from simkernel.runtime.inference.batch_settings import batch_settings
from simkernel.runtime.inference.bundle import check_precision
from simkernel.runtime.inference.cross_encoder import BundleCrossEncoder
from simkernel.runtime.inference.embedding_cache import EmbeddingCache
from simkernel.runtime.inference.text_encoder import DEFAULT_CACHE_SIZE, BundleTextEncoder
from simkernel.runtime.inference.token_encoder import BundleTokenEncoder


class TextEncoder(BundleTextEncoder):
    """Embed texts with a sentence-transformers bi-encoder exported to ONNX (no torch at run time).

    Args:
        model: a bundle folder, a checkpoint folder (exported on first use), a model id in the store,
            or a hub repo id; see :func:`simkernel.runtime.acquisition.resolve.resolve_model` for the
            order.
        precision, threads, providers, cache_size, cache_dir, batching, max_batch_tokens, max_queue: see
            :class:`~simkernel.runtime.inference.text_encoder.BundleTextEncoder` (``cache_dir``: the
            persistent embedding cache shared across runs, default ``$SIMKERNEL_CACHE_DIR`` or off).
        token: Hugging Face token for downloading a private or gated repo (default: ``HF_TOKEN``);
            unused when the model is a local folder or already in the store.
    """

    def __init__(
        self,
        model: str | Path = DEFAULT_MODEL,
        precision: str = "fp32",
        threads: int | None = None,
        providers: list[str] | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        token: str | None = None,
        cache_dir: str | os.PathLike | None = None,
        batching: bool | None = None,
        max_batch_tokens: int | None = None,
        max_queue: int | None = None,
    ) -> None:
        check_precision(precision)
        EmbeddingCache(cache_size)  # a bad cache_size fails before any download or export
        batch_settings(max_batch_tokens, max_queue)  # so do bad batching settings
        folder = resolve_model(model, precision=precision, token=token)
        super().__init__(
            folder,
            precision,
            threads,
            providers,
            cache_size,
            name=model,
            cache_dir=cache_dir,
            batching=batching,
            max_batch_tokens=max_batch_tokens,
            max_queue=max_queue,
        )


class CrossEncoder(BundleCrossEncoder):
    """Score text pairs with a cross-encoder (``...ForSequenceClassification``) exported to ONNX.

    ``model`` is resolved as :class:`TextEncoder` resolves it; ``precision``, ``threads``, ``providers``,
    ``batching``, ``max_batch_tokens`` and ``max_queue`` are
    :class:`~simkernel.runtime.inference.cross_encoder.BundleCrossEncoder`'s; ``token`` is the Hugging
    Face token for downloading a private or gated repo (default: ``HF_TOKEN``); unused when the model is a
    local folder or already in the store.
    """

    def __init__(
        self,
        model: str | Path,
        precision: str = "fp32",
        threads: int | None = None,
        providers: list[str] | None = None,
        token: str | None = None,
        batching: bool | None = None,
        max_batch_tokens: int | None = None,
        max_queue: int | None = None,
    ) -> None:
        check_precision(precision)
        batch_settings(max_batch_tokens, max_queue)
        folder = resolve_model(model, precision=precision, token=token)
        super().__init__(
            folder,
            precision,
            threads,
            providers,
            name=model,
            batching=batching,
            max_batch_tokens=max_batch_tokens,
            max_queue=max_queue,
        )


class TokenEncoder(BundleTokenEncoder):
    """The hidden states per token of a transformer's layers, as BERTScore computes them (no torch at run
    time): see :class:`~simkernel.runtime.inference.token_encoder.BundleTokenEncoder` for ``encode``,
    ``tokenize`` and the properties. Build it with :meth:`load`."""

    @classmethod
    def load(
        cls,
        model: str | Path = DEFAULT_MODEL,
        *,
        precision: str = "fp32",
        threads: int | None = None,
        providers: list[str] | None = None,
        token: str | None = None,
        export: bool = True,
    ) -> TokenEncoder:
        """The token encoder of ``model``: a model id (hub id or short name), a checkpoint folder, or a
        token-layers bundle folder. Token layers missing from the store are exported into it first
        (:func:`simkernel.runtime.acquisition.token_layers.resolve_token_layers`: needs the export extra,
        and the hub for an id without an offline source) unless ``export=False``. ``precision``,
        ``threads`` and ``providers`` as in ``BundleTokenEncoder``; ``token``: the Hugging Face token for a
        private or gated repo (default ``HF_TOKEN``)."""
        check_precision(precision)
        folder = resolve_token_layers(model, precision=precision, token=token, export=export)
        return cls(folder, precision, threads, providers, name=model)
