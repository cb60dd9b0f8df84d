"""eval_lib-compatible metrics: ``ReferenceMatchMetric``, ``SemanticSimilarityMetric``, ``EvalTestCase``,
``evaluate`` and its result classes (eval-ai-library 0.8.2's API, on simkernel's ONNX encoder and kernel).

Switching from eval_lib is a change of import::

    from simkernel.metrics.vector_metrics import ReferenceMatchMetric  # or simkernel.vector_metrics
    from simkernel import EvalTestCase, evaluate

Names resolve lazily: importing this package loads neither pydantic (``EvalTestCase``) nor a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simkernel._lazy import lazy_face

_LAZY = {
    "ReferenceMatchMetric": "simkernel.metrics.vector_metrics",
    "SemanticSimilarityMetric": "simkernel.metrics.vector_metrics",
    "EvalTestCase": "simkernel.metrics.test_case",
    "ConversationalEvalTestCase": "simkernel.metrics.test_case",
    "evaluate": "simkernel.metrics.evaluation",
    "MetricResult": "simkernel.metrics.evaluation",
    "TestCaseResult": "simkernel.metrics.evaluation",
    "EmbeddingProvider": "simkernel.metrics.embedding_providers",
    "LocalEmbeddingProvider": "simkernel.metrics.embedding_providers",
    "OpenAIEmbeddingProvider": "simkernel.metrics.embedding_providers",
    "EmbeddingAPIError": "simkernel.metrics.embedding_providers",
    "EmbeddingConfigurationError": "simkernel.metrics.embedding_providers",
    "get_embedding_provider": "simkernel.metrics.embedding_providers",
}

__all__ = [
    "ConversationalEvalTestCase",
    "EmbeddingAPIError",
    "EmbeddingConfigurationError",
    "EmbeddingProvider",
    "EvalTestCase",
    "LocalEmbeddingProvider",
    "MetricResult",
    "OpenAIEmbeddingProvider",
    "ReferenceMatchMetric",
    "SemanticSimilarityMetric",
    "TestCaseResult",
    "evaluate",
    "get_embedding_provider",
]

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.metrics.embedding_providers import (
        EmbeddingAPIError,
        EmbeddingConfigurationError,
        EmbeddingProvider,
        LocalEmbeddingProvider,
        OpenAIEmbeddingProvider,
        get_embedding_provider,
    )
    from simkernel.metrics.evaluation import MetricResult, TestCaseResult, evaluate
    from simkernel.metrics.test_case import ConversationalEvalTestCase, EvalTestCase
    from simkernel.metrics.vector_metrics import ReferenceMatchMetric, SemanticSimilarityMetric


__getattr__, __dir__ = lazy_face(__name__, _LAZY, globals())
