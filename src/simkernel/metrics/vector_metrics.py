"""eval_lib-compatible vector metrics: ``ReferenceMatchMetric`` and ``SemanticSimilarityMetric``.

Drop-in for ``eval_lib.metrics.vector_metrics`` / ``eval_lib.vector_metrics`` (eval-ai-library 0.8.2):
same constructor parameters and defaults, same ``async evaluate(test_case)`` result dict, same formula,
reason and log strings (see ``scoring`` for the numerics). What differs, on purpose:

- ``embedding_provider="local"`` runs the package's ONNX encoder, shared by every metric instance with the
  same model (eval_lib reloads a sentence-transformers model per instance); ``"openai"`` is a standard-library
  HTTP client (``embedding_providers.openai``). An :class:`EmbeddingProvider` instance is accepted too.
- ``verbose=False`` prints nothing (eval_lib prints the raw result dict regardless).
- An ``aggregation`` other than "max"/"mean" warns at construction; it is still treated as the mean, as
  eval_lib does silently, so results stay identical.
- ``cache_dir=`` (an extension, keyword-only): the local model's persistent embedding cache, shared across
  runs and processes (default ``$SIMKERNEL_CACHE_DIR`` if set, else off).
- ``threshold="calibrated"`` (an extension) takes the threshold calibrated on human labels that the local
  model's registry entry carries (``threshold_source`` says which); a model without one raises ValueError.
- References given as a plain string raise ``TypeError`` (eval_lib fails later with a confusing error);
  non-string references raise ``ValueError`` naming the index.
- ``simkernel.evaluate`` scores many cases of a local-provider metric in one embedding pass over the
  distinct texts and one kernel call (eval_lib embeds ``[output] + references`` case by case); a subclass
  that overrides ``evaluate`` (or a test that patches it) is awaited case by case instead.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from simkernel.metrics.console import print_metric_result
from simkernel.metrics.embedding_providers import EmbeddingProvider, get_embedding_provider
from simkernel.runtime.inference.inputs import check_unicode
from simkernel.scoring.metrics.reference import score_groups
from simkernel.scoring.settings import AGGREGATIONS

__all__ = ["ReferenceMatchMetric", "SemanticSimilarityMetric"]


def _check_threshold(threshold: Any, provider: EmbeddingProvider) -> tuple[float, str]:
    """(threshold, where it came from): a number as given, or ``"calibrated"``: the threshold the local
    model's registry entry carries (see :mod:`simkernel.calibration.thresholds`)."""
    if isinstance(threshold, str) and threshold.strip().lower() == "calibrated":
        from simkernel.calibration.thresholds import calibrated_threshold
        from simkernel.metrics.embedding_providers import LocalEmbeddingProvider

        if not isinstance(provider, LocalEmbeddingProvider):
            raise ValueError(
                f"threshold='calibrated' needs a local model with a calibrated threshold; {provider!r} has none: pass a number, e.g. threshold=0.7"
            )
        resolved = calibrated_threshold(provider.model_id, provider.precision)
        return resolved.value, resolved.source
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise TypeError(
            f"threshold must be a number (the minimum passing score, 0.0 to 1.0) or 'calibrated', got {threshold!r}"
        )
    if math.isnan(threshold):
        raise ValueError("threshold must be a number, got NaN")
    return float(threshold), "threshold= argument"


def _check_references(references: Any) -> list[str]:
    """``references`` as a new list of strings (None -> []); TypeError/ValueError naming the problem."""
    if references is None:
        return []
    if isinstance(references, (str, bytes)):
        raise TypeError(
            f"references must be a list of strings, got a single {type(references).__name__} ({references[:60]!r}); wrap it in a list: references=[{references[:30]!r}]"
        )
    if not isinstance(references, Iterable):
        raise TypeError(
            f"references must be a list of strings, got {type(references).__name__}: {references!r}"
        )
    refs = list(references)
    for i, ref in enumerate(refs):
        if not isinstance(ref, str):
            raise ValueError(
                f"references[{i}] must be a string, got {type(ref).__name__}: {ref!r}; convert it with str() or remove it"
            )
        check_unicode(ref, f"references[{i}]")
    return refs


def _text_field(test_case: Any, field: str) -> str:
    """``test_case.<field>`` as eval_lib reads it (None -> ""), with a clear error for a wrong object."""
    if not hasattr(test_case, field):
        raise TypeError(
            f"test case must be an EvalTestCase (or an object with .{field}), got {type(test_case).__name__}; build one with simkernel.EvalTestCase(input=..., actual_output=...)"
        )
    value = getattr(test_case, field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"test_case.{field} must be a string, got {type(value).__name__}: {value!r}")
    check_unicode(value, f"test_case.{field}")
    return value


class _VectorMetric:
    """Shared parts of the vector metrics: settings, provider, printing, one-case evaluation.

    ``evaluate()`` of ``simkernel.metrics.evaluation`` drives local-provider metrics in batches through
    ``_special_result``, ``_texts``, ``_aggregation`` and ``_result``; ``evaluate(test_case)`` here is
    the same computation for one case.
    """

    name: str
    requires_actual_output = False  # like eval_lib: an empty actual_output is embedded, not short-cut
    _aggregation = "max"

    def __init__(
        self,
        threshold: float | str,
        embedding_provider: str | EmbeddingProvider,
        model_name: str | None,
        verbose: bool,
        cache_dir: str | None = None,
    ) -> None:
        self.model = (
            None  # eval_lib's judge-LLM slot (MetricResult.evaluation_model); vector metrics have none
        )
        self.verbose = verbose
        self.provider = get_embedding_provider(embedding_provider, model_name, cache_dir)
        self.threshold, self.threshold_source = _check_threshold(threshold, self.provider)

    # -- batch protocol -----------------------------------------------------------------------------
    def _special_result(self, test_case: Any) -> dict[str, Any] | None:
        """A result that needs no embeddings (e.g. no references), else None."""
        return None

    def _texts(self, test_case: Any) -> tuple[str, list[str]]:
        """(text to score, texts to compare it with) for ``test_case``."""
        raise NotImplementedError

    def _result(self, test_case: Any, score: float, similarities: np.ndarray, cost: float) -> dict[str, Any]:
        """The result dict from the kernel score and the float64 similarities of this case."""
        raise NotImplementedError

    # -- API ------------------------------------------------------------------------------------------
    async def evaluate(self, test_case: Any) -> dict[str, Any]:
        """Score ``test_case``: one provider call over ``[text] + references``; returns the result dict
        (name, score, success, reason, evaluation_cost, evaluation_log)."""
        result = self._special_result(test_case)
        if result is None:
            text, refs = self._texts(test_case)
            embeddings, cost = await self.provider.embed([text, *refs])
            embeddings = np.asarray(embeddings)
            if embeddings.ndim != 2 or embeddings.shape[0] != len(refs) + 1:
                raise ValueError(
                    f"{self.provider!r} returned embeddings of shape {embeddings.shape} for {len(refs) + 1} texts"
                )
            k = len(refs)
            groups = score_groups(
                embeddings, np.zeros(1, np.int64), np.arange(1, k + 1), np.array([0, k]), self._aggregation
            )
            result = self._result(test_case, float(groups.scores[0]), groups.similarities, cost or 0.0)
        self.print_result(result)
        return result

    def print_result(self, result: dict[str, Any]) -> None:
        """Print ``result`` in eval_lib's layout when ``verbose``; print nothing otherwise."""
        if self.verbose:
            print_metric_result(result, self.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(threshold={self.threshold!r}, provider={self.provider!r})"


class ReferenceMatchMetric(_VectorMetric):
    """Similarity of ``actual_output`` to the closest (``"max"``) or average (``"mean"``) reference text.

    Per reference: cosine of the embeddings (0.0 for a zero vector) clamped to [0, 1]; score = max or mean
    of those; ``success = score >= threshold``. ``references`` are set on the metric, not the test case.
    """

    name = "referenceMatchMetric"

    def __init__(
        self,
        threshold: float | str = 0.7,
        references: Sequence[str] | None = None,
        aggregation: str = "max",
        embedding_provider: str | EmbeddingProvider = "openai",
        model_name: str | None = None,
        verbose: bool = False,
        *,
        cache_dir: str | None = None,
    ) -> None:
        super().__init__(threshold, embedding_provider, model_name, verbose, cache_dir)
        self.references = _check_references(references)
        if aggregation not in AGGREGATIONS:
            warnings.warn(
                f"aggregation={aggregation!r} is neither 'max' nor 'mean'; it is treated as 'mean' (as eval_lib does). Pass aggregation='max' or aggregation='mean'.",
                UserWarning,
                stacklevel=2,
            )
        self.aggregation = aggregation

    @property
    def _aggregation(self) -> str:  # type: ignore[override]
        return self.aggregation

    def _special_result(self, test_case: Any) -> dict[str, Any] | None:
        if self.references:
            return None
        return {
            "name": self.name,
            "score": 0.0,
            "success": False,
            "reason": "No reference texts provided.",
            "evaluation_cost": 0.0,
            "evaluation_log": {"error": "No references"},
        }

    def _texts(self, test_case: Any) -> tuple[str, list[str]]:
        return _text_field(test_case, "actual_output"), _check_references(self.references)

    def _result(self, test_case: Any, score: float, similarities: np.ndarray, cost: float) -> dict[str, Any]:
        n = len(self.references)
        return {
            "name": self.name,
            "score": score,
            "success": bool(score >= self.threshold),
            "reason": f"Reference match ({self.aggregation}): {score:.4f} across {n} references",
            "evaluation_cost": cost,
            "evaluation_log": {
                "aggregation": self.aggregation,
                "similarities": [round(float(s), 4) for s in similarities],
                "num_references": n,
                "embedding_cost": cost,
            },
        }


class SemanticSimilarityMetric(_VectorMetric):
    """Cosine similarity of ``actual_output`` and ``expected_output`` (None -> ""), clamped to [0, 1]."""

    name = "semanticSimilarityMetric"

    def __init__(
        self,
        threshold: float | str = 0.7,
        embedding_provider: str | EmbeddingProvider = "openai",
        model_name: str | None = None,
        verbose: bool = False,
        *,
        cache_dir: str | None = None,
    ) -> None:
        super().__init__(threshold, embedding_provider, model_name, verbose, cache_dir)

    def _texts(self, test_case: Any) -> tuple[str, list[str]]:
        return _text_field(test_case, "actual_output"), [_text_field(test_case, "expected_output")]

    def _result(self, test_case: Any, score: float, similarities: np.ndarray, cost: float) -> dict[str, Any]:
        actual = _text_field(test_case, "actual_output")
        expected = _text_field(test_case, "expected_output")
        return {
            "name": self.name,
            "score": score,
            "success": bool(score >= self.threshold),
            "reason": f"Semantic similarity: {score:.4f} (threshold: {self.threshold})",
            "evaluation_cost": cost,
            "evaluation_log": {
                "cosine_similarity": score,
                "embedding_cost": cost,
                "actual_length": len(actual),
                "expected_length": len(expected),
            },
        }
