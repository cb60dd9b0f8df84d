"""Haystack-compatible evaluators: ``from simkernel.components.evaluators import SASEvaluator``.

Drop-in replacements for ``haystack.components.evaluators.SASEvaluator`` and ``AnswerExactMatchEvaluator``
(haystack-ai 3.4.1). Importing this package does not import haystack; with haystack installed the classes
are Haystack components (see :mod:`simkernel.components`).
"""

from simkernel.components.evaluators.answer_exact_match import AnswerExactMatchEvaluator
from simkernel.components.evaluators.sas_evaluator import SASEvaluator

__all__ = ["AnswerExactMatchEvaluator", "SASEvaluator"]
