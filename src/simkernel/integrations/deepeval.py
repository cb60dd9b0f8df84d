"""deepeval: :class:`SimkernelDeepEvalEmbedding`, a ``DeepEvalBaseEmbeddingModel`` on simkernel.

Wherever deepeval takes an ``embedder`` (the synthesizer's ``ContextConstructionConfig``, its document
chunking and context grouping)::

    from deepeval.synthesizer.config import ContextConstructionConfig
    from simkernel.integrations.deepeval import SimkernelDeepEvalEmbedding

    embedder = SimkernelDeepEvalEmbedding(model="sentence-transformers/all-MiniLM-L6-v2")
    vectors = embedder.embed_texts(["first text", "second text"])     # one encoder call
    config = ContextConstructionConfig(embedder=embedder)              # with your critic_model

Needs ``pip install 'simkernel[deepeval]'``.
"""

from __future__ import annotations

from typing import Any

from simkernel.integrations._common import aembed, check_settings, embed, require, shared_encoder
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
from simkernel.runtime.inference.inputs import check_batch_size

try:
    from deepeval.models import DeepEvalBaseEmbeddingModel
except ImportError:  # pragma: no cover - raises MissingDependencyError naming the extra
    require("deepeval.models", "deepeval", "deepeval")
    raise


class SimkernelDeepEvalEmbedding(DeepEvalBaseEmbeddingModel):
    """deepeval embeddings computed by simkernel's ONNX runtime (no torch).

    Args:
        model: a model id in the store, a hub repo id or a local bundle / checkpoint folder (as
            :class:`simkernel.runtime.TextEncoder` takes it).
        precision: ``"fp32"`` (sentence-transformers' numbers), ``"int8"`` or ``"bf16"``.
        threads: CPU threads of the model (None: the CPUs this process may use).
        batch_size: texts per forward pass.
        normalize: L2-normalise the vectors (default True).

    As deepeval's contract has it, :meth:`load_model` runs at construction: ``self.model`` is the
    process-wide shared :class:`~simkernel.runtime.TextEncoder`; :meth:`get_model_name` is ``model`` as given.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str = "fp32",
        threads: int | None = None,
        batch_size: int = 32,
        normalize: bool = True,
    ) -> None:
        check_settings(model, precision, threads)
        self.model_id = model
        self.precision = precision
        self.threads = threads
        self.batch_size = check_batch_size(batch_size)
        self.normalize = normalize
        # deepeval's __init__ strips a "provider/" prefix off the name, then sets self.model = load_model()
        super().__init__(model)
        self.name = model

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_id!r}, precision={self.precision!r}, threads={self.threads!r})"

    def load_model(self, *args: Any, **kwargs: Any) -> Any:
        """The shared :class:`~simkernel.runtime.TextEncoder` for these settings (loaded once per process)."""
        return shared_encoder(self.model_id, self.precision, self.threads)

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        return self.model_id

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order: one encoder call for the whole list."""
        return embed(self.model, list(texts), self.batch_size, self.normalize)

    def embed_text(self, text: str) -> list[float]:
        return self.embed_texts([text])[0]

    async def a_embed_texts(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_texts` awaited on :meth:`~simkernel.runtime.TextEncoder.aencode`."""
        return await aembed(self.model, list(texts), self.batch_size, self.normalize)

    async def a_embed_text(self, text: str) -> list[float]:
        return (await self.a_embed_texts([text]))[0]
