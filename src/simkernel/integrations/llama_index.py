"""LlamaIndex: :class:`SimkernelEmbedding`, a ``llama_index.core.embeddings.BaseEmbedding`` on simkernel.

Set it as the embedding model of an index (or ``Settings.embed_model``)::

    from llama_index.core import Settings
    from simkernel.integrations.llama_index import SimkernelEmbedding

    Settings.embed_model = SimkernelEmbedding(model="sentence-transformers/all-MiniLM-L6-v2")

``get_text_embedding_batch`` hands LlamaIndex's chunks of ``embed_batch_size`` texts (here 2,048,
LlamaIndex's maximum, so a list of up to 2,048 texts is ONE encoder call) to the encoder, which runs them
in length-sorted forward passes of ``batch_size``. Needs ``pip install 'simkernel[llamaindex]'``
(llama-index-core).
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

try:
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.embeddings import BaseEmbedding
except ImportError:  # pragma: no cover - raises MissingDependencyError naming the extra
    require("llama_index.core.embeddings", "llamaindex", "LlamaIndex")
    raise

MAX_EMBED_BATCH = 2048  # BaseEmbedding.embed_batch_size's upper bound


class SimkernelEmbedding(BaseEmbedding):
    """LlamaIndex embeddings computed by simkernel's ONNX runtime (no torch).

    Args:
        model: a model id in the store, a hub repo id or a bundle / checkpoint folder (kept as
            ``model_name``, LlamaIndex's field).
        precision: ``"fp32"`` (sentence-transformers' numbers), ``"int8"`` or ``"bf16"``.
        threads: CPU threads of the model (None: the CPUs this process may use).
        batch_size: texts per forward pass.
        normalize: L2-normalise the vectors (default True).
        embed_batch_size: texts LlamaIndex hands over per call (default 2,048, its maximum).

    The model is the process-wide shared one, loaded at the first call; ``copy.deepcopy`` and ``pickle``
    work after it too (a copy loads the model at its first use).
    """

    precision: str = Field(default="fp32", description="fp32, int8 or bf16")
    threads: int | None = Field(default=None, description="CPU threads of the model")
    batch_size: int = Field(default=32, description="texts per forward pass")
    normalize: bool = Field(default=True, description="L2-normalise the vectors")
    _encoder: Any = PrivateAttr(default=None)

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str = "fp32",
        threads: int | None = None,
        batch_size: int = 32,
        normalize: bool = True,
        embed_batch_size: int = MAX_EMBED_BATCH,
        **kwargs: Any,
    ) -> None:
        model = kwargs.pop("model_name", model)  # from_dict / to_dict use LlamaIndex's name
        check_settings(model, precision, threads)
        ours: dict[str, Any] = {"precision": precision, "threads": threads, "normalize": normalize}
        ours["batch_size"] = check_batch_size(batch_size)
        super().__init__(model_name=model, embed_batch_size=embed_batch_size, **ours, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "SimkernelEmbedding"

    @property
    def encoder(self) -> Any:
        """The shared :class:`~simkernel.runtime.TextEncoder` (loaded on first use)."""
        if self._encoder is None:
            self._encoder = shared_encoder(self.model_name, self.precision, self.threads)
        return self._encoder

    # A loaded model cannot be copied or pickled (its locks and sessions): copies leave it out and load it
    # at their first use (the shared instance of their process), as LazyModelState does for plain classes.
    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> SimkernelEmbedding:
        memo = {} if memo is None else memo
        if self._encoder is not None:
            memo[id(self._encoder)] = None  # deepcopy returns what the memo holds: the copy gets None
        return super().__deepcopy__(memo)

    def __getstate__(self) -> dict[Any, Any]:
        # LlamaIndex's __getstate__ drops what it cannot pickle, with a logged warning: hand it a shallow
        # copy without the model
        unloaded = self.model_copy()
        unloaded._encoder = None
        return super(SimkernelEmbedding, unloaded).__getstate__()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order: one encoder call for the whole list."""
        return embed(self.encoder, texts, self.batch_size, self.normalize)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await aembed(await loaded_encoder(self), texts, self.batch_size, self.normalize)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embeddings([query])[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return (await self._aget_text_embeddings([query]))[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]
