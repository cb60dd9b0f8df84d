"""Haystack rankers on simkernel's ONNX runtime: ``from simkernel.components.rankers import
SimkernelSimilarityRanker``.

:class:`SimkernelSimilarityRanker` replaces sentence-transformers-haystack's
``SentenceTransformersSimilarityRanker`` (a cross-encoder; ``top_k``, ``scale_score``, ``score_threshold``,
query and document prefixes and suffixes, ``meta_fields_to_embed``), with simkernel's ``precision`` and
``threads``, ``warm_up``, ``to_dict`` / ``from_dict`` and ``run_async``. A saved pipeline holding it loads
with ``Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)`` (:data:`simkernel.components.ALLOWED_MODULES`).
Importing this package imports haystack (``Document``): it needs ``pip install 'simkernel[haystack]'``.
"""

from simkernel.components.rankers.similarity_ranker import SimkernelSimilarityRanker

__all__ = ["SimkernelSimilarityRanker"]
