"""MLflow 3: :class:`SimkernelSimilarityScorer` for ``mlflow.genai.evaluate`` and
:func:`semantic_similarity_metric` for the classic ``mlflow.evaluate``.

The scorer is the SAS score of each row: the cosine similarity of ``outputs`` and
``expectations["expected_response"]`` on simkernel's encoder, returned as an ``mlflow.entities.Feedback``
with the score as its value, a rationale naming the score, the threshold and pass / fail, and the
threshold in its metadata. ``threshold="calibrated"`` takes the threshold calibrated on human labels
that the model's registry entry carries (as the metrics and ``simkernel score --threshold calibrated`` do)::

    import mlflow
    from simkernel.integrations.mlflow import SimkernelSimilarityScorer

    data = [{"inputs": {"question": "Capital of France?"}, "outputs": "Paris is the capital.",
             "expectations": {"expected_response": "The capital of France is Paris."}}]
    result = mlflow.genai.evaluate(data=data, scorers=[SimkernelSimilarityScorer(threshold="calibrated")])
    result.metrics["semantic_similarity/mean"]

Needs ``pip install 'simkernel[mlflow]'`` (mlflow-skinny and alembic, or the full ``mlflow``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simkernel.calibration.thresholds import resolve_threshold
from simkernel.integrations._common import check_settings, require, shared_encoder
from simkernel.kernels import paired_cosine
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL

try:
    from mlflow.entities import AssessmentSource, AssessmentSourceType, Feedback
    from mlflow.genai.scorers import Scorer
except ImportError:  # pragma: no cover - raises MissingDependencyError naming the extra
    require("mlflow.genai.scorers", "mlflow", "MLflow")
    raise

EXPECTED = "expected_response"


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"{what} must be the response text (a string), got {type(value).__name__}: {value!r}; give the text itself (e.g. have predict_fn return a string)"
        )
    return value


def _cosines(encoder: Any, outputs: list[str], expected: list[str], batch_size: int) -> np.ndarray:
    """The paired cosines of ``outputs`` and ``expected`` (float64): ONE encoder call for both lists."""
    if not outputs:
        return np.empty(0, dtype=np.float64)
    vectors = encoder.encode(outputs + expected, batch_size=batch_size)
    return paired_cosine(vectors[: len(outputs)], vectors[len(outputs) :]).astype(np.float64)


class SimkernelSimilarityScorer(Scorer):
    """An ``mlflow.genai.evaluate`` scorer: cosine similarity of ``outputs`` and
    ``expectations["expected_response"]`` (raw cosine, as Haystack's and ragas' SAS), as a ``Feedback``.

    Args:
        model: a model id in the store, a hub repo id or a local bundle / checkpoint folder (as
            :class:`simkernel.runtime.TextEncoder` takes it).
        precision: ``"fp32"`` (sentence-transformers' numbers), ``"int8"`` or ``"bf16"``.
        threads: CPU threads of the model (None: the CPUs this process may use).
        threshold: the minimum passing score, or ``"calibrated"``: the threshold calibrated on human labels
            for ``model`` at ``precision`` (``threshold_source`` says which); a model without one raises
            ValueError at construction.
        name: the assessment's name (the metrics are ``NAME/mean`` and so on).
        aggregations: MLflow's aggregations of the values (default: the mean).

    ``pass_if`` (MLflow 3.18's ``EvaluationResult.passed``) is ``score >= threshold``. Each row is one
    encoder call; MLflow's worker threads share forward passes through the process-wide shared encoder.
    """

    model: str = DEFAULT_MODEL
    precision: str = "fp32"
    threads: int | None = None
    threshold: float = 0.7
    threshold_source: str = "threshold= argument"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str = "fp32",
        threads: int | None = None,
        threshold: float | str = 0.7,
        name: str = "semantic_similarity",
        aggregations: list[Any] | None = None,
        **kwargs: Any,
    ) -> None:
        check_settings(model, precision, threads)
        resolved = resolve_threshold(threshold, model, precision, "threshold= argument")
        fields: dict[str, Any] = {
            "name": name,
            "aggregations": aggregations,
            "model": model,
            "precision": precision,
            "threads": threads,
            "threshold": resolved.value,
            "threshold_source": resolved.source,
        }
        super().__init__(**fields, **kwargs)

    @property
    def pass_if(self) -> Any:
        threshold = self.threshold
        return lambda value: value is not None and float(value) >= threshold

    @property
    def encoder(self) -> Any:
        """The shared :class:`~simkernel.runtime.TextEncoder` (loaded on first use)."""
        return shared_encoder(self.model, self.precision, self.threads)

    # only the arguments it uses: MLflow passes a scorer the parameters its __call__ names
    def __call__(self, *, outputs: Any = None, expectations: dict[str, Any] | None = None) -> Feedback:  # type: ignore[override]
        if not isinstance(expectations, dict) or EXPECTED not in expectations:
            raise ValueError(
                f"{self.name} compares outputs with expectations[{EXPECTED!r}], and this row has none (expectations={expectations!r}); give each row expectations={{{EXPECTED!r}: 'the reference answer'}}"
            )
        output = _text(outputs, "outputs")
        expected = _text(expectations[EXPECTED], f"expectations[{EXPECTED!r}]")
        score = float(_cosines(self.encoder, [output], [expected], batch_size=32)[0])
        passed = score >= self.threshold
        verdict = "pass" if passed else "fail"
        return Feedback(
            name=self.name,
            value=score,
            rationale=f"cosine similarity of outputs and expectations[{EXPECTED!r}] on {self.model} ({self.precision}): {score:.4f}, {'>=' if passed else '<'} threshold {self.threshold:.4f} ({self.threshold_source}): {verdict}",
            source=AssessmentSource(
                source_type=AssessmentSourceType.CODE, source_id=f"simkernel:{self.model}"
            ),
            metadata={  # MLflow keeps assessment metadata as strings
                "threshold": repr(self.threshold),
                "threshold_source": self.threshold_source,
                "passed": "true" if passed else "false",
                "model": self.model,
                "precision": self.precision,
            },
        )


def semantic_similarity_metric(
    model: str = DEFAULT_MODEL,
    precision: str = "fp32",
    threads: int | None = None,
    threshold: float | str = 0.7,
    name: str = "semantic_similarity",
    batch_size: int = 32,
) -> Any:
    """An ``mlflow.metrics.make_metric`` metric for the classic ``mlflow.evaluate``: per row, the cosine
    similarity of the prediction and the target (``targets=``), with a justification; aggregates: MLflow's
    standard ones (mean, variance, p90) and ``pass_rate``, the share of rows at or above ``threshold``
    (a number or ``"calibrated"``). All rows are ONE encoder call."""
    from mlflow.metrics import MetricValue, make_metric

    check_settings(model, precision, threads)
    resolved = resolve_threshold(threshold, model, precision, "threshold= argument")

    def eval_fn(predictions: Any, targets: Any = None) -> MetricValue:
        if targets is None:
            raise ValueError(
                f"{name} compares each prediction with its target, and mlflow.evaluate was given none; pass targets='COLUMN' (the reference answers)"
            )
        outputs = [_text(p, "each prediction") for p in list(predictions)]
        expected = [_text(t, "each target") for t in list(targets)]
        scores = _cosines(shared_encoder(model, precision, threads), outputs, expected, batch_size)
        passed = scores >= resolved.value
        justifications = [
            f"cosine similarity {s:.4f}, {'>=' if p else '<'} threshold {resolved.value:.4f}: {'pass' if p else 'fail'}"
            for s, p in zip(scores.tolist(), passed.tolist(), strict=True)
        ]
        aggregates = {
            "mean": float(scores.mean()) if len(scores) else float("nan"),
            "variance": float(scores.var()) if len(scores) else float("nan"),
            "p90": float(np.percentile(scores, 90)) if len(scores) else float("nan"),
            "pass_rate": float(passed.mean()) if len(scores) else float("nan"),
        }
        return MetricValue(
            scores=scores.tolist(), justifications=justifications, aggregate_results=aggregates
        )

    return make_metric(
        eval_fn=eval_fn,
        greater_is_better=True,
        name=name,
        long_name=f"semantic similarity on {model} ({precision}), threshold {resolved.value:.4f} ({resolved.source})",
        version="v1",
    )
