"""What a metric is: the columns it reads, the settings it takes, the column it adds, and a batch scorer.

A metric is one module of :mod:`simkernel.scoring.metrics` (or of a plugin) holding one :class:`Metric`;
:mod:`simkernel.scoring.registry` lists them. Every batch entry point (``score_file`` and ``simkernel
score`` on the local or the Ray engine, Spark, the server's ``/v1/score/{metric}``) reads rows by the
metric's roles, builds its scorer from :class:`~simkernel.scoring.settings.ScoringSettings`, and scores
batches through :meth:`Scorer.score`: nothing else in the package knows a metric by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from simkernel.scoring.settings import ScoringSettings

__all__ = ["MODEL_SETTINGS", "Metric", "Scorer", "TARGET_ROLES"]

# the roles of the texts a metric compares: the predicted text against one of these
TARGET_ROLES = ("ground_truth", "references")
# the settings of a metric that runs a model
MODEL_SETTINGS = frozenset({"model", "precision", "batch_size", "threads", "cache_dir"})


class Scorer(Protocol):
    """A metric configured for one run: ``load()`` once (timed apart), then ``score`` per batch of rows.

    ``score(predicted, targets)`` returns one number per row: ``targets[i]`` is row ``i``'s ground truth (a
    text, or a list of texts where the metric takes several) or its list of references. A row's score
    depends on its own texts only, never on its batch-mates, so any split into batches gives the same
    numbers. ``description`` names the metric and model for a summary; ``notes`` are lines for it.
    """

    description: str
    notes: list[str]

    def load(self) -> None: ...

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]: ...


@dataclass(frozen=True)
class Metric:
    """One metric of the registry.

    - ``name``: how every entry point names it (``--mode NAME``, ``metric="NAME"``, ``/v1/score/NAME``);
    - ``target``: the role of the texts it compares the predicted text with: ``"ground_truth"`` (one text a
      row, or a list of them where ``several_targets``) or ``"references"`` (a list of texts a row);
    - ``settings``: the :class:`ScoringSettings` fields it reads (the entry points refuse the others);
    - ``score_type``: the Arrow type of the score column it adds (``"float32"``, ``"float64"``, ``"int64"``);
    - ``make_scorer(settings)``: its :class:`Scorer` (nothing loaded until ``load()``);
    - ``summary``: one line for ``--help`` and the docs;
    - ``several_targets``: a row's ground truth may be a list of texts (scored against the best of them);
    - ``default_threshold``: the success threshold when the user sets none (None: no success column);
    - ``local_only``: it scores millions of rows a second in one process, so an engine that spreads the
      work over a cluster refuses it (``exact``).
    """

    name: str
    target: str
    settings: frozenset[str]
    score_type: str
    make_scorer: Callable[[ScoringSettings], Scorer]
    summary: str
    several_targets: bool = False
    default_threshold: float | None = None
    local_only: bool = False

    def __post_init__(self) -> None:
        if self.target not in TARGET_ROLES:
            raise ValueError(f"a metric's target must be one of {TARGET_ROLES}, got {self.target!r}")
        if self.score_type not in ("float32", "float64", "int64"):
            raise ValueError(
                f"a metric's score_type must be float32, float64 or int64, got {self.score_type!r}"
            )

    @property
    def loads_model(self) -> bool:
        """Whether it runs a model (an engine that spreads model work, such as Ray, has work to do)."""
        return "model" in self.settings

    def scorer(self, settings: ScoringSettings | None = None) -> Scorer:
        """This metric's scorer for ``settings`` (default settings when None)."""
        return self.make_scorer(settings if settings is not None else ScoringSettings())
