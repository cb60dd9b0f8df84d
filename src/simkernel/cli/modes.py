"""The three scoring modes of ``simkernel score``, each a thin adapter over the package's public API.

No scoring formula lives here: ``sas`` calls :class:`simkernel.components.evaluators.SASEvaluator`,
``exact`` calls :class:`~simkernel.components.evaluators.AnswerExactMatchEvaluator` and ``reference``
calls the batch path of :mod:`simkernel.metrics` (the same code as ``ReferenceMatchMetric``), so the
command line scores exactly what the Python APIs score.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, Protocol

from simkernel.cli.errors import DataError
from simkernel.cli.parser import DEFAULT_MODEL

DEFAULT_BATCH_SIZE = 32
DEFAULT_PRECISION = "fp32"


class Scorer(Protocol):
    """Scores rows: ``load()`` once (timed apart), then ``score(predicted, targets)`` per chunk of rows."""

    description: str
    notes: list[str]

    def load(self) -> None: ...

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]: ...


def make_scorer(args: argparse.Namespace) -> Scorer:
    """The scorer of ``args.mode`` configured from the command-line options."""
    if args.mode == "exact":
        return ExactScorer()
    model = args.model or DEFAULT_MODEL
    precision = args.precision or DEFAULT_PRECISION
    batch_size = args.batch_size or DEFAULT_BATCH_SIZE
    if args.mode == "sas":
        return SasScorer(model, precision, batch_size, args.threads)
    return ReferenceScorer(model, precision, batch_size, args.threads, args.aggregation or "max")


class SasScorer:
    """Semantic answer similarity through ``SASEvaluator`` (bi-encoder cosine, or a cross-encoder's score)."""

    def __init__(self, model: str, precision: str, batch_size: int, threads: int | None) -> None:
        from simkernel.components.evaluators import SASEvaluator

        options: dict[str, Any] = {"precision": precision}
        if threads is not None:
            options["threads"] = threads
        self.evaluator = SASEvaluator(model=model, batch_size=batch_size, **options)
        self.description = f"mode sas, model {model} ({precision})"
        self.notes: list[str] = []

    def load(self) -> None:
        self.evaluator.warm_up()

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        result = self.evaluator.run(ground_truth_answers=list(targets), predicted_answers=list(predicted))
        scores = result["individual_scores"]
        if scores and isinstance(scores[0], (list, tuple)):
            raise DataError(
                f"the model gives {len(scores[0])} scores per pair (a classifier with several labels), not one "
                "similarity; use a bi-encoder or a one-label cross-encoder with --model"
            )
        return [float(s) for s in scores]


class ExactScorer:
    """Exact match through ``AnswerExactMatchEvaluator``: 1 if the two texts are identical, else 0."""

    def __init__(self) -> None:
        from simkernel.components.evaluators import AnswerExactMatchEvaluator

        self.evaluator = AnswerExactMatchEvaluator()
        self.description = "mode exact (case- and whitespace-sensitive)"
        self.notes: list[str] = []

    def load(self) -> None:
        return None

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        result = self.evaluator.run(ground_truth_answers=list(targets), predicted_answers=list(predicted))
        return [int(s) for s in result["individual_scores"]]


class ReferenceScorer:
    """eval_lib's reference match through :mod:`simkernel.metrics`: the predicted text against each of its
    references, cosine clamped to [0, 1], then max or mean; a row without references scores 0.0."""

    def __init__(self, model: str, precision: str, batch_size: int, threads: int | None, aggregation: str) -> None:
        self.model = model
        self.precision = precision
        self.batch_size = batch_size
        self.threads = threads
        self.aggregation = aggregation
        self.description = f"mode reference ({aggregation}), model {model} ({precision})"
        self.notes: list[str] = []
        self._no_references = 0
        self._encoder: Any = None

    def load(self) -> None:
        from simkernel.runtime import get_text_encoder

        options: dict[str, Any] = {"precision": self.precision}
        if self.threads is not None:
            options["threads"] = self.threads
        self._encoder = get_text_encoder(self.model, **options)

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        from simkernel.metrics.reference_match import reference_match_scores

        self._no_references += sum(1 for refs in targets if not refs)
        if self._no_references:
            self.notes[:] = [
                f"{self._no_references} row(s) had no references and scored 0.0 (as eval_lib does)"
            ]
        scores = reference_match_scores(
            list(predicted), [list(refs) for refs in targets], encoder=self._encoder,
            aggregation=self.aggregation, batch_size=self.batch_size,
        )
        return [float(s) for s in scores]
