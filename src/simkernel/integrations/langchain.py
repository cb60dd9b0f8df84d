"""LangChain: :class:`SimkernelEmbeddings`, a ``langchain_core.embeddings.Embeddings`` on simkernel.

Anywhere LangChain takes an ``Embeddings`` (vector stores, retrievers, ``HuggingFaceEmbeddings``'s place)::

    from simkernel.integrations.langchain import SimkernelEmbeddings

    embeddings = SimkernelEmbeddings(model="sentence-transformers/all-MiniLM-L6-v2", precision="int8")
    vectors = embeddings.embed_documents(["first text", "second text"])   # one encoder call
    query = await embeddings.aembed_query("a question")                    # never blocks the event loop

Needs ``pip install 'simkernel[langchain]'`` (langchain-core).
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
    from langchain_core.embeddings import Embeddings
except ImportError:  # pragma: no cover - raises MissingDependencyError naming the extra
    require("langchain_core.embeddings", "langchain", "LangChain")
    raise


class SimkernelEmbeddings(LazyModelState, Embeddings):
    """LangChain embeddings computed by simkernel's ONNX runtime (no torch).

    Args:
        model: a model id in the store, a hub repo id or a local bundle / checkpoint folder (as
            :class:`simkernel.runtime.TextEncoder` takes it).
        precision: ``"fp32"`` (sentence-transformers' numbers), ``"int8"`` or ``"bf16"``.
        threads: CPU threads of the model (None: the CPUs this process may use).
        batch_size: texts per forward pass.
        normalize: L2-normalise the vectors (default True; ``HuggingFaceEmbeddings``'
            ``encode_kwargs={"normalize_embeddings": ...}``).

    The model is the process-wide shared one, loaded at the first call; ``copy.deepcopy`` and ``pickle``
    work after it too (a copy loads the model at its first use).
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
        self.model = model
        self.precision = precision
        self.threads = threads
        self.batch_size = check_batch_size(batch_size)
        self.normalize = normalize
        self._encoder: Any = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, precision={self.precision!r}, threads={self.threads!r})"

    @property
    def encoder(self) -> Any:
        """The shared :class:`~simkernel.runtime.TextEncoder` (loaded on first use)."""
        if self._encoder is None:
            self._encoder = shared_encoder(self.model, self.precision, self.threads)
        return self._encoder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order: one encoder call for the whole list."""
        return embed(self.encoder, texts, self.batch_size, self.normalize)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_documents` awaited on :meth:`~simkernel.runtime.TextEncoder.aencode`."""
        return await aembed(await loaded_encoder(self), texts, self.batch_size, self.normalize)

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]
