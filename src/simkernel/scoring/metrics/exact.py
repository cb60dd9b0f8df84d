"""``exact``: exact match, as Haystack's ``AnswerExactMatchEvaluator``: 1 if the predicted text equals the
ground truth (case- and whitespace-sensitive), else 0. Loads no model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from simkernel.scoring.metric import Metric
from simkernel.scoring.settings import ScoringSettings

__all__ = ["METRIC", "ExactScorer", "exact_matches"]


def exact_matches(ground_truths: Sequence[Any], predicted: Sequence[Any]) -> list[int]:
    """1 where ``predicted[i] == ground_truths[i]``, else 0 (Python equality, as Haystack compares)."""
    return [1 if truth == answer else 0 for truth, answer in zip(ground_truths, predicted, strict=True)]


class ExactScorer:
    """The ``exact`` metric for batches of rows (nothing to load)."""

    def __init__(self, settings: ScoringSettings | None = None) -> None:
        self.description = "mode exact (case- and whitespace-sensitive)"
        self.notes: list[str] = []

    def load(self) -> None:
        return None

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        return cast("list[float]", exact_matches(targets, predicted))  # 0 and 1 as ints: written as int64


METRIC = Metric(
    name="exact",
    target="ground_truth",
    settings=frozenset(),
    score_type="int64",
    make_scorer=ExactScorer,
    local_only=True,
    summary="exact match (Haystack's AnswerExactMatchEvaluator): 1 if the two texts are identical, else 0",
)
