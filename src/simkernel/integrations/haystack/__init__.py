"""Haystack: embedders and a ranker on simkernel's ONNX runtime, with the parameters of the
sentence-transformers-haystack components they replace.

- :class:`SimkernelTextEmbedder` for ``SentenceTransformersTextEmbedder`` (a query -> ``embedding``);
- :class:`SimkernelDocumentEmbedder` for ``SentenceTransformersDocumentEmbedder`` (documents ->
  ``documents`` with ``embedding`` set; ``meta_fields_to_embed``, ``prefix`` / ``suffix``);
- :class:`SimkernelSimilarityRanker` for ``SentenceTransformersSimilarityRanker`` (a cross-encoder;
  ``top_k``, ``scale_score``, ``score_threshold``).

``prefix``, ``suffix``, ``batch_size``, ``progress_bar``, ``normalize_embeddings``,
``meta_fields_to_embed`` and ``embedding_separator`` mean what they mean there; ``precision`` is
simkernel's (``"fp32"``, ``"int8"``, ``"bf16"``: the model's graph), and ``threads`` the model's CPU
threads. Each has ``warm_up``, ``to_dict`` / ``from_dict`` and ``run_async`` (awaits the encoder without
blocking the event loop; concurrent runs share forward passes). A saved pipeline holding them loads with
``Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)``. Needs ``pip install 'simkernel[haystack]'``.
"""

from simkernel.integrations.haystack.embedders import (
    ALLOWED_MODULES,
    SimkernelDocumentEmbedder,
    SimkernelTextEmbedder,
)
from simkernel.integrations.haystack.ranker import SimkernelSimilarityRanker

__all__ = [
    "ALLOWED_MODULES",
    "SimkernelDocumentEmbedder",
    "SimkernelSimilarityRanker",
    "SimkernelTextEmbedder",
]
