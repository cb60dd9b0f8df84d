"""ragas: :class:`SimkernelRagasEmbedding`, a ragas 0.4 ``BaseRagasEmbedding`` on simkernel.

In place of ragas' ``HuggingFaceEmbeddings`` (sentence-transformers) wherever a ragas metric takes
``embeddings=``, e.g. the collections ``SemanticSimilarity`` (the SAS score)::

    from ragas.metrics.collections import SemanticSimilarity
    from simkernel.integrations.ragas import SimkernelRagasEmbedding

    metric = SemanticSimilarity(embeddings=SimkernelRagasEmbedding(model="sentence-transformers/all-MiniLM-L6-v2"))
    metric.score(reference="Paris is the capital of France.", response="The capital of France is Paris.").value

Needs ``pip install 'simkernel[ragas]'`` (ragas 0.4).
"""

from __future__ import annotations

from typing import Any

from simkernel.integrations._common import (
    aembed,
    check_settings,
    embed,
    loaded_encoder,
    require,
    shared_encoder,
)
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
from simkernel.runtime.inference.inputs import check_batch_size
from simkernel.runtime.inference.lazy_model import LazyModelState

try:
    from ragas.embeddings.base import BaseRagasEmbedding
    from ragas.embeddings.utils import validate_texts
except ImportError:  # pragma: no cover - raises MissingDependencyError naming the extra
    require("ragas.embeddings.base", "ragas", "ragas")
    raise


def _no_options(method: str, kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise TypeError(
            f"SimkernelRagasEmbedding.{method} takes no per-call encode options, got {sorted(kwargs)}; set batch_size / normalize on the constructor"
        )


class SimkernelRagasEmbedding(LazyModelState, BaseRagasEmbedding):
    """ragas embeddings computed by simkernel's ONNX runtime (no torch).

    Args:
        model: a model id in the store, a hub repo id or a local bundle / checkpoint folder (as
            :class:`simkernel.runtime.TextEncoder` takes it).
        precision: ``"fp32"`` (sentence-transformers' numbers), ``"int8"`` or ``"bf16"``.
        threads: CPU threads of the model (None: the CPUs this process may use).
        batch_size: texts per forward pass (``HuggingFaceEmbeddings``' ``batch_size``).
        normalize: L2-normalise the vectors (``HuggingFaceEmbeddings``' ``normalize_embeddings``, default True).
        cache: a ragas ``CacheInterface`` for :meth:`embed_text` / :meth:`aembed_text`, as ragas' providers
            take it (simkernel's own embedding cache: ``SIMKERNEL_CACHE_DIR``).

    The model is the process-wide shared one, loaded at the first call. :meth:`embed_texts` and
    :meth:`aembed_texts` check their texts as ``HuggingFaceEmbeddings`` does (a non-empty list of
    non-blank strings) and embed the whole list in one encoder call. ``copy.deepcopy`` and ``pickle`` work
    after the first call too (a copy loads the model at its first use).
    """

    PROVIDER_NAME = "simkernel"
    DEFAULT_MODEL = DEFAULT_MODEL

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str = "fp32",
        threads: int | None = None,
        batch_size: int = 32,
        normalize: bool = True,
        cache: Any = None,
    ) -> None:
        check_settings(model, precision, threads)
        self.model = model
        self.precision = precision
        self.threads = threads
        self.batch_size = check_batch_size(batch_size)
        self.normalize = normalize
        self._encoder: Any = None
        super().__init__(cache=cache)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, precision={self.precision!r}, threads={self.threads!r})"

    @property
    def encoder(self) -> Any:
        """The shared :class:`~simkernel.runtime.TextEncoder` (loaded on first use)."""
        if self._encoder is None:
            self._encoder = shared_encoder(self.model, self.precision, self.threads)
        return self._encoder

    def _encode(self, texts: list[str]) -> list[list[float]]:
        return embed(self.encoder, texts, self.batch_size, self.normalize)

    async def _aencode(self, texts: list[str]) -> list[list[float]]:
        return await aembed(await loaded_encoder(self), texts, self.batch_size, self.normalize)

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        """The vector of one text."""
        _no_options("embed_text", kwargs)
        return self._encode([text])[0]

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        """:meth:`embed_text` awaited on :meth:`~simkernel.runtime.TextEncoder.aencode`."""
        _no_options("aembed_text", kwargs)
        return (await self._aencode([text]))[0]

    def embed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        """One vector per text, in order: one encoder call for the whole list."""
        _no_options("embed_texts", kwargs)
        return self._encode(validate_texts(texts))

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        """:meth:`embed_texts` awaited on :meth:`~simkernel.runtime.TextEncoder.aencode`."""
        _no_options("aembed_texts", kwargs)
        return await self._aencode(validate_texts(texts))
