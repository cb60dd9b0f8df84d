"""A test-only metric that adds two columns, registered in this one module: the length difference and
the length ratio of two texts.

``difference = len(predicted) - len(ground_truth)`` in characters (int64), ``ratio = min / max`` of the
two lengths (float64, 1.0 for two empty texts), the primary column (so ``--threshold`` and the summary's
pass rate read it although it comes second). It proves that every entry point carries every column of a
multi-column metric: ``score_file``, ``simkernel score`` (local and Ray), Spark's struct column and the
server's ``columns``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.scoring.length_ratio_metric import length_ratio

from simkernel.scoring import Metric, ScoringSettings


def length_pair(a: str, b: str) -> tuple[int, float]:
    return len(a) - len(b), length_ratio(a, b)


class LengthPairScorer:
    def __init__(self, settings: ScoringSettings) -> None:
        self.description = "mode length_pair"
        self.notes: list[str] = []

    def load(self) -> None:
        return None

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[tuple[int, float]]:
        return [length_pair(p, t) for p, t in zip(predicted, targets, strict=True)]


METRIC = Metric(
    name="length_pair",
    target="ground_truth",
    settings=frozenset(),
    score_type="float64",
    columns=(("difference", "int64"), ("ratio", "float64")),
    primary="ratio",
    make_scorer=LengthPairScorer,
    summary="test only: the length difference and the length ratio of the two texts, in characters",
)
