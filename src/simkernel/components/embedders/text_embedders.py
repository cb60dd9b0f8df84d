"""``SimkernelTextEmbedder`` and ``SimkernelDocumentEmbedder``: Haystack embedders on the shared
:class:`~simkernel.runtime.TextEncoder`, with sentence-transformers-haystack's parameters, and
``document_text`` (what is embedded of a document, which the ranker scores too)."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from simkernel.components._haystack import component_from_dict, haystack_component, output_types, registry_key
from simkernel.components._settings import check_settings, require, shared_encoder
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
from simkernel.runtime.inference.inputs import check_batch_size
from simkernel.runtime.inference.lazy_model import LazyModelState

try:
    from haystack import Document
except ImportError:  # pragma: no cover - raises MissingDependencyError naming the extra
    require("haystack", "haystack", "Haystack")
    raise


def document_text(document: Any, meta_fields: list[str], separator: str, prefix: str, suffix: str) -> str:
    """What sentence-transformers-haystack embeds for a document: the prefix, the non-None meta values
    named in ``meta_fields`` and the content joined by ``separator``, then the suffix."""
    meta = [str(document.meta[key]) for key in meta_fields if document.meta.get(key) is not None]
    return prefix + separator.join([*meta, document.content or ""]) + suffix


class _Embedder(LazyModelState):
    """The settings, model loading and serialisation the two embedders share; ``copy.deepcopy`` and
    ``pickle`` work, warmed up or not (a copy loads the model at its first use)."""

    def __init__(
        self,
        model: str,
        precision: str,
        threads: int | None,
        prefix: str,
        suffix: str,
        batch_size: int,
        progress_bar: bool,
        normalize_embeddings: bool,
    ) -> None:
        check_settings(model, precision, threads)
        self.model = model
        self.precision = precision
        self.threads = threads
        self.prefix = prefix
        self.suffix = suffix
        self.batch_size = check_batch_size(batch_size)
        self.progress_bar = progress_bar
        self.normalize_embeddings = normalize_embeddings
        self._encoder: Any = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the model (the process-wide shared one) once; ``run`` calls it when needed."""
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = shared_encoder(self.model, self.precision, self.threads)

    def _options(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "show_progress_bar": self.progress_bar,
            "normalize_embeddings": self.normalize_embeddings,
        }

    def _encode(self, texts: list[str]) -> list[list[float]]:
        self.warm_up()
        return self._encoder.encode(texts, **self._options()).tolist()

    async def _aencode(self, texts: list[str]) -> list[list[float]]:
        if self._encoder is None:  # loading reads files: not on the event loop
            from simkernel.runtime.inference.threads import run_blocking

            await run_blocking(self.warm_up)
        return (await self._encoder.aencode(texts, **self._options())).tolist()

    def _init_parameters(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "precision": self.precision,
            "threads": self.threads,
            "prefix": self.prefix,
            "suffix": self.suffix,
            "batch_size": self.batch_size,
            "progress_bar": self.progress_bar,
            "normalize_embeddings": self.normalize_embeddings,
        }


@haystack_component
class SimkernelTextEmbedder(_Embedder):
    """Embed one string (a query): sentence-transformers-haystack's ``SentenceTransformersTextEmbedder``
    on simkernel. Output ``embedding``: a list of floats."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str = "fp32",
        threads: int | None = None,
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        progress_bar: bool = True,
        normalize_embeddings: bool = False,
    ) -> None:
        super().__init__(
            model, precision, threads, prefix, suffix, batch_size, progress_bar, normalize_embeddings
        )

    def to_dict(self) -> dict[str, Any]:
        return {"type": registry_key(type(self)), "init_parameters": self._init_parameters()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimkernelTextEmbedder:
        """Rebuild from :meth:`to_dict` output (also one saved as ``simkernel.integrations.haystack``'s)."""
        return component_from_dict(cls, data)

    def _text(self, text: str) -> str:
        if not isinstance(text, str):
            raise TypeError(
                f"SimkernelTextEmbedder expects a string as input, got {type(text).__name__}; to embed a list of Documents, use SimkernelDocumentEmbedder"
            )
        return self.prefix + text + self.suffix

    @output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        """``{"embedding": [...]}`` of ``prefix + text + suffix``."""
        return {"embedding": self._encode([self._text(text)])[0]}

    @output_types(embedding=list[float])
    async def run_async(self, text: str) -> dict[str, Any]:
        """:meth:`run` awaited on the encoder's ``aencode`` (the event loop keeps running)."""
        return {"embedding": (await self._aencode([self._text(text)]))[0]}


@haystack_component
class SimkernelDocumentEmbedder(_Embedder):
    """Embed documents: sentence-transformers-haystack's ``SentenceTransformersDocumentEmbedder`` on
    simkernel. Output ``documents``: copies of the input documents with ``embedding`` set (all texts in ONE
    encoder call: batched by token length, each distinct text embedded once)."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str = "fp32",
        threads: int | None = None,
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        progress_bar: bool = True,
        normalize_embeddings: bool = False,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
    ) -> None:
        super().__init__(
            model, precision, threads, prefix, suffix, batch_size, progress_bar, normalize_embeddings
        )
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        self.embedding_separator = embedding_separator

    def to_dict(self) -> dict[str, Any]:
        init_parameters = {
            **self._init_parameters(),
            "meta_fields_to_embed": self.meta_fields_to_embed,
            "embedding_separator": self.embedding_separator,
        }
        return {"type": registry_key(type(self)), "init_parameters": init_parameters}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimkernelDocumentEmbedder:
        """Rebuild from :meth:`to_dict` output (also one saved as ``simkernel.integrations.haystack``'s)."""
        return component_from_dict(cls, data)

    def _texts(self, documents: list[Document]) -> list[str]:
        if not isinstance(documents, list) or any(not isinstance(d, Document) for d in documents):
            raise TypeError(
                "SimkernelDocumentEmbedder expects a list of Documents as input; to embed a string, use SimkernelTextEmbedder"
            )
        fields, separator = self.meta_fields_to_embed, self.embedding_separator
        return [document_text(d, fields, separator, self.prefix, self.suffix) for d in documents]

    @output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """``{"documents": [...]}``: the documents with their embeddings."""
        texts = self._texts(documents)
        vectors = self._encode(texts) if texts else []
        return {"documents": [replace(d, embedding=v) for d, v in zip(documents, vectors, strict=True)]}

    @output_types(documents=list[Document])
    async def run_async(self, documents: list[Document]) -> dict[str, list[Document]]:
        """:meth:`run` awaited on the encoder's ``aencode`` (the event loop keeps running)."""
        texts = self._texts(documents)
        vectors = await self._aencode(texts) if texts else []
        return {"documents": [replace(d, embedding=v) for d, v in zip(documents, vectors, strict=True)]}
