"""A test-only metric registered in this one module: the length ratio of two texts.

``score = min(len(a), len(b)) / max(len(a), len(b))`` in characters (1.0 for two empty texts), as float64.
It exists to prove that a metric is added in one place: the tests declare this module's ``METRIC`` as an
entry point of the ``simkernel.metrics`` group (a ``*.dist-info`` folder on the path, as an installed
plugin package has) and then find it, with no other change, in ``score_file``, ``simkernel score`` on the
local and Ray engines, Spark and the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simkernel.scoring import Metric, ScoringSettings


def length_ratio(a: str, b: str) -> float:
    longest = max(len(a), len(b))
    return min(len(a), len(b)) / longest if longest else 1.0


class LengthRatioScorer:
    def __init__(self, settings: ScoringSettings) -> None:
        self.description = "mode length_ratio"
        self.notes: list[str] = []

    def load(self) -> None:
        return None

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        return [length_ratio(p, t) for p, t in zip(predicted, targets, strict=True)]


METRIC = Metric(
    name="length_ratio",
    target="ground_truth",
    settings=frozenset(),
    score_type="float64",
    make_scorer=LengthRatioScorer,
    summary="test only: the length ratio of the two texts, in characters",
)
