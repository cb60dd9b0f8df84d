"""``simkernel.vector_metrics``: the spelling of eval_lib's installed package (``eval_lib.vector_metrics``).

Same classes as :mod:`simkernel.metrics.vector_metrics` (the spelling of eval_lib's documentation).
"""

from __future__ import annotations

from simkernel.metrics.vector_metrics import ReferenceMatchMetric, SemanticSimilarityMetric

__all__ = ["ReferenceMatchMetric", "SemanticSimilarityMetric"]
