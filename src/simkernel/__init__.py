"""simkernel: semantic similarity scoring for evaluation, fast on a CPU, with no PyTorch at run time.

The package is layered; each layer is importable on its own and ``import simkernel`` loads none of them
(attributes below are resolved lazily, so the import costs milliseconds and never touches onnxruntime,
torch, transformers, sentence_transformers or haystack):

- ``simkernel.kernels``: the native cosine kernel (C in ``csrc/``, Cython in ``_cosine.pyx``).
- ``simkernel.runtime``: ONNX models: tokenizer, session, pooling, model store, hub, export.
- ``simkernel.components.evaluators``: Haystack-compatible ``SASEvaluator``, ``AnswerExactMatchEvaluator``.
- ``simkernel.metrics``: eval_lib-compatible ``ReferenceMatchMetric``, ``SemanticSimilarityMetric``,
  ``EvalTestCase`` and ``evaluate``.
- ``simkernel.calibration``: ``calibrate`` (a score threshold from human labels) and ``Calibration``.
- ``simkernel.scoring``: the scoring core (settings, the metric registry, one module per metric).
- ``simkernel.tables``: the file formats; ``simkernel.batch``: the batch engine (``score_file``, ``calibrate_file``,
  ``compare_files``); ``simkernel.stats``: intervals and paired comparisons (numpy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simkernel._lazy import lazy_face
from simkernel._version import __version__

# public name -> module that defines it
_LAZY = {
    "TextEncoder": "simkernel.runtime",
    "CrossEncoder": "simkernel.runtime",
    "SASEvaluator": "simkernel.components.evaluators",
    "AnswerExactMatchEvaluator": "simkernel.components.evaluators",
    "ReferenceMatchMetric": "simkernel.metrics.vector_metrics",
    "SemanticSimilarityMetric": "simkernel.metrics.vector_metrics",
    "EvalTestCase": "simkernel.metrics.test_case",
    "evaluate": "simkernel.metrics.evaluation",
    "calibrate": "simkernel.calibration",
    "Calibration": "simkernel.calibration",
    "score_file": "simkernel.batch.api",
    "calibrate_file": "simkernel.batch.calibrate",
    "compare_files": "simkernel.batch.compare",
}

__all__ = [
    "__version__",
    "AnswerExactMatchEvaluator",
    "Calibration",
    "CrossEncoder",
    "EvalTestCase",
    "ReferenceMatchMetric",
    "SASEvaluator",
    "SemanticSimilarityMetric",
    "TextEncoder",
    "calibrate",
    "calibrate_file",
    "compare_files",
    "evaluate",
    "score_file",
]

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.batch.api import score_file
    from simkernel.batch.calibrate import calibrate_file
    from simkernel.batch.compare import compare_files
    from simkernel.calibration import Calibration, calibrate
    from simkernel.components.evaluators import AnswerExactMatchEvaluator, SASEvaluator
    from simkernel.metrics.evaluation import evaluate
    from simkernel.metrics.test_case import EvalTestCase
    from simkernel.metrics.vector_metrics import ReferenceMatchMetric, SemanticSimilarityMetric
    from simkernel.runtime import CrossEncoder, TextEncoder


__getattr__, __dir__ = lazy_face(__name__, _LAZY, globals())
