"""The "local" embedding provider: the package's ONNX ``TextEncoder`` instead of sentence-transformers.

Every provider (hence every metric instance) with the same model, precision and threads shares ONE
loaded model through :func:`simkernel.runtime.get_text_encoder`; creating a metric loads nothing, the
model loads on the first ``embed``. The cost is always 0.0.

Model names are read the way sentence-transformers reads them (eval_lib hands ``model_name`` to
``SentenceTransformer``): ``None`` means eval_lib's default ``"all-MiniLM-L6-v2"``, and a bare name
without ``/`` that is not an existing folder is a sentence-transformers model, so ``"all-MiniLM-L6-v2"``
becomes ``"sentence-transformers/all-MiniLM-L6-v2"``. Anything else (``org/name`` ids, folder paths) is
passed to the runtime as given.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

import numpy as np

from simkernel.metrics.embedding_providers.base import EmbeddingProvider, run_blocking
from simkernel.runtime.inference.lazy_model import LazyModelState
from simkernel.scoring.metrics.reference import DEFAULT_LOCAL_MODEL, resolve_local_model_id

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.runtime import TextEncoder

__all__ = ["DEFAULT_LOCAL_MODEL", "LocalEmbeddingProvider", "resolve_local_model_id"]


class LocalEmbeddingProvider(LazyModelState, EmbeddingProvider):
    """Embeddings from a local ONNX bi-encoder (float32, pooled as sentence-transformers pools them).

    ``precision`` ("fp32", "int8", or "bf16" on CPUs with native bf16: checked here, so an unavailable
    precision fails when the metric is made, not at its first score), ``threads`` (CPU threads, as
    :class:`simkernel.TextEncoder` uses them; None = one per CPU), ``batch_size`` (texts per forward
    pass) and ``cache_dir`` (the persistent embedding cache; None: ``$SIMKERNEL_CACHE_DIR`` if set, else
    off) go to the runtime. A metric with this provider can be deep-copied and pickled, before or after
    its first score (a copy loads the model at its first use).
    """

    def __init__(
        self,
        model_name: str | None = DEFAULT_LOCAL_MODEL,
        *,
        precision: str = "fp32",
        threads: int | None = None,
        batch_size: int = 32,
        cache_dir: str | os.PathLike | None = None,
    ) -> None:
        from simkernel.runtime.inference.bundle import check_precision

        self.model_name = model_name if model_name is not None else DEFAULT_LOCAL_MODEL
        self.model_id = resolve_local_model_id(model_name)
        self.precision = check_precision(precision)
        self.threads = threads
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self._encoder: TextEncoder | None = None
        self._lock = threading.Lock()

    @property
    def encoder(self) -> TextEncoder:
        """The shared ``TextEncoder`` (loaded on first access, then reused by every provider)."""
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    from simkernel.runtime import get_text_encoder

                    self._encoder = get_text_encoder(
                        self.model_id,
                        precision=self.precision,
                        threads=self.threads,
                        cache_dir=self.cache_dir,
                    )
        return self._encoder

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 embeddings, in the order of ``texts`` (blocking)."""
        return self.encoder.encode(list(texts), batch_size=self.batch_size, normalize=False)

    async def embed(self, texts: list[str]) -> tuple[np.ndarray, float]:
        """``(embeddings, 0.0)`` without blocking the event loop: the model loads (first call) in a worker
        thread, then the texts join the shared model's queue, so concurrent metric calls share passes."""
        encoder = self._encoder if self._encoder is not None else await run_blocking(lambda: self.encoder)
        embeddings = await encoder.aencode(list(texts), batch_size=self.batch_size, normalize=False)
        return embeddings, 0.0

    def __repr__(self) -> str:
        return f"LocalEmbeddingProvider(model_name={self.model_name!r}, precision={self.precision!r})"
