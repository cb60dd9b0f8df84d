"""``SimkernelSimilarityRanker``: sentence-transformers-haystack's ``SentenceTransformersSimilarityRanker``
on the shared :class:`~simkernel.runtime.CrossEncoder`."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import numpy as np

from simkernel.components._haystack import component_from_dict, haystack_component, output_types, registry_key
from simkernel.components._settings import check_settings, require
from simkernel.components.embedders.text_embedders import document_text
from simkernel.runtime.inference.inputs import check_batch_size
from simkernel.runtime.inference.lazy_model import LazyModelState

try:
    from haystack import Document
    from haystack.utils.misc import _deduplicate_documents
except ImportError:  # pragma: no cover - raises MissingDependencyError naming the extra
    require("haystack", "haystack", "Haystack")
    raise

DEFAULT_RANKER = "cross-encoder/ms-marco-MiniLM-L-6-v2"


@haystack_component
class SimkernelSimilarityRanker(LazyModelState):
    """Rank documents by a cross-encoder's score of ``(query, document)``, highest first.

    As sentence-transformers-haystack's ranker: documents are deduplicated by id first (the highest
    scored kept), ``scale_score=True`` applies a sigmoid to the logits (``False``: raw logits),
    ``score_threshold`` drops documents scored below it, ``top_k`` keeps the best; ``run``'s
    ``top_k`` / ``scale_score`` / ``score_threshold`` override the constructor's. All pairs are scored in
    one cross-encoder call. ``copy.deepcopy`` and ``pickle`` work, warmed up or not (a copy loads the
    model at its first use).
    """

    _LOADED_MODEL_ATTRIBUTES = ("_cross_encoder",)

    def __init__(
        self,
        model: str = DEFAULT_RANKER,
        precision: str = "fp32",
        threads: int | None = None,
        top_k: int = 10,
        query_prefix: str = "",
        query_suffix: str = "",
        document_prefix: str = "",
        document_suffix: str = "",
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        scale_score: bool = True,
        score_threshold: float | None = None,
        batch_size: int = 16,
    ) -> None:
        check_settings(model, precision, threads)
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        self.model = model
        self.precision = precision
        self.threads = threads
        self.top_k = top_k
        self.query_prefix = query_prefix
        self.query_suffix = query_suffix
        self.document_prefix = document_prefix
        self.document_suffix = document_suffix
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        self.embedding_separator = embedding_separator
        self.scale_score = scale_score
        self.score_threshold = score_threshold
        self.batch_size = check_batch_size(batch_size)
        self._cross_encoder: Any = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the cross-encoder (the process-wide shared one) once; ``run`` calls it when needed."""
        if self._cross_encoder is None:
            with self._lock:
                if self._cross_encoder is None:
                    from simkernel.runtime.shared import get_cross_encoder

                    self._cross_encoder = get_cross_encoder(self.model, self.precision, self.threads)

    def to_dict(self) -> dict[str, Any]:
        names = (
            "model precision threads top_k query_prefix query_suffix document_prefix document_suffix "
            "meta_fields_to_embed embedding_separator scale_score score_threshold batch_size"
        ).split()
        return {
            "type": registry_key(type(self)),
            "init_parameters": {name: getattr(self, name) for name in names},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimkernelSimilarityRanker:
        """Rebuild from :meth:`to_dict` output (also one saved as ``simkernel.integrations.haystack``'s)."""
        return component_from_dict(cls, data)

    def _pairs(self, query: str, documents: list[Document], top_k: int | None) -> tuple[list, list]:
        if top_k is not None and top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        unique = _deduplicate_documents(documents)
        text = self.query_prefix + query + self.query_suffix
        fields, separator = self.meta_fields_to_embed, self.embedding_separator
        pairs = [
            (text, document_text(d, fields, separator, self.document_prefix, self.document_suffix))
            for d in unique
        ]
        return unique, pairs

    def _ranked(
        self,
        documents: list[Document],
        logits: np.ndarray,
        top_k: int | None,
        scale_score: bool | None,
        score_threshold: float | None,
    ) -> dict[str, list[Document]]:
        scale = self.scale_score if scale_score is None else scale_score
        threshold = self.score_threshold if score_threshold is None else score_threshold
        logits = np.asarray(logits, dtype=np.float32).reshape(len(documents), -1)[:, 0]
        scores = 1.0 / (1.0 + np.exp(-logits)) if scale else logits
        order = sorted(range(len(documents)), key=lambda i: float(scores[i]), reverse=True)
        ranked = [replace(documents[i], score=float(scores[i])) for i in order]
        if threshold is not None:
            ranked = [d for d in ranked if d.score is not None and d.score >= threshold]
        return {"documents": ranked[: self.top_k if top_k is None else top_k]}

    @output_types(documents=list[Document])
    def run(
        self,
        query: str,
        documents: list[Document],
        top_k: int | None = None,
        scale_score: bool | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """``{"documents": [...]}``: the documents with their scores, best first."""
        if not documents:
            return {"documents": []}
        self.warm_up()
        unique, pairs = self._pairs(query, documents, top_k)
        logits = self._cross_encoder.predict(pairs, batch_size=self.batch_size, apply_activation=False)
        return self._ranked(unique, logits, top_k, scale_score, score_threshold)

    @output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        documents: list[Document],
        top_k: int | None = None,
        scale_score: bool | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """:meth:`run` awaited on the cross-encoder's ``apredict`` (the event loop keeps running)."""
        if not documents:
            return {"documents": []}
        if self._cross_encoder is None:
            from simkernel.runtime.inference.threads import run_blocking

            await run_blocking(self.warm_up)
        unique, pairs = self._pairs(query, documents, top_k)
        logits = await self._cross_encoder.apredict(pairs, batch_size=self.batch_size, apply_activation=False)
        return self._ranked(unique, logits, top_k, scale_score, score_threshold)
