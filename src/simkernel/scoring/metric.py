"""What a metric is: the columns it reads, the settings it takes, the columns it adds, and a batch scorer.

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

__all__ = ["MODEL_SETTINGS", "SCORE_TYPES", "Metric", "Scorer", "TARGET_ROLES"]

# the roles of the texts a metric compares: the predicted text against one of these
TARGET_ROLES = ("ground_truth", "references")
# the settings of a metric that runs a model
MODEL_SETTINGS = frozenset({"model", "precision", "batch_size", "threads", "cache_dir"})
# the Arrow types of the columns a metric adds
SCORE_TYPES = ("float32", "float64", "int64")


class Scorer(Protocol):
    """A metric configured for one run: ``load()`` once (timed apart), then ``score`` per batch of rows.

    ``score(predicted, targets)`` returns one value per row: ``targets[i]`` is row ``i``'s ground truth (a
    text, or a list of texts where the metric takes several) or its list of references. The value is a
    number for a metric that adds one column, and a tuple of numbers, one per column in the order of
    :attr:`Metric.columns`, for a metric that adds several. A row's score
    depends on its own texts only, never on its batch-mates, so any split into batches gives the same
    numbers. ``description`` names the metric and model for a summary; ``notes`` are lines for it.
    """

    description: str
    notes: list[str]

    def load(self) -> None: ...

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[Any]: ...


@dataclass(frozen=True)
class Metric:
    """One metric of the registry.

    - ``name``: how every entry point names it (``--mode NAME``, ``metric="NAME"``, ``/v1/score/NAME``);
    - ``target``: the role of the texts it compares the predicted text with: ``"ground_truth"`` (one text a
      row, or a list of them where ``several_targets``) or ``"references"`` (a list of texts a row);
    - ``settings``: the :class:`ScoringSettings` fields it reads (the entry points refuse the others);
    - ``score_type``: the Arrow type of its (primary) score (``"float32"``, ``"float64"``, ``"int64"``);
    - ``make_scorer(settings)``: its :class:`Scorer` (nothing loaded until ``load()``);
    - ``summary``: one line for ``--help`` and the docs;
    - ``several_targets``: a row's ground truth may be a list of texts (scored against the best of them);
    - ``default_threshold``: the success threshold when the user sets none (None: no success column);
    - ``local_only``: it scores millions of rows a second in one process, so an engine that spreads the
      work over a cluster refuses it (``exact``);
    - ``columns``: for a metric that adds several columns (BERTScore's P, R and F), each one's
      ``(suffix, Arrow type)`` in the order its scorer returns them; empty (the default): one column, of
      ``score_type``. ``primary``: the suffix of the column that ``--threshold`` / success, calibration
      and the summary's pass rate read (default: the first); its type must be ``score_type``;
    - ``options``: the names of its own settings, given in :attr:`ScoringSettings.options`
      (``--metric-option NAME=VALUE``, ``score_file(metric_options={...})``); the entry points refuse others;
    - ``token_layers``: its model runs as a token encoder (the model's token-layers bundle, not its
      sentence-embedding one): what an engine ships to its workers.

    Column names (:meth:`output_columns`): a one-column metric writes its score under ``--score-column``
    (default ``score``), as ever. A metric with several columns writes ``{score_column}_{suffix}`` each
    (``score_P``, ``score_R``, ``score_F``): the names say they are scores and which, they sort together
    beside the input's columns, ``--score-column`` still names them all (``--score-column bert`` gives
    ``bert_P``...), and a bare suffix (``P``, ``F``) would clash with input columns far more often.
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
    columns: tuple[tuple[str, str], ...] = ()
    primary: str = ""
    options: frozenset[str] = frozenset()
    token_layers: bool = False

    def __post_init__(self) -> None:
        if self.target not in TARGET_ROLES:
            raise ValueError(f"a metric's target must be one of {TARGET_ROLES}, got {self.target!r}")
        if self.score_type not in SCORE_TYPES:
            raise ValueError(
                f"a metric's score_type must be float32, float64 or int64, got {self.score_type!r}"
            )
        columns = tuple((str(suffix), str(kind)) for suffix, kind in self.columns)
        if not columns:
            columns = (("", self.score_type),)
        elif len(columns) == 1:
            raise ValueError(
                f"a metric with one column declares it with score_type only, not columns={columns!r}"
            )
        suffixes = [suffix for suffix, _ in columns]
        if len(columns) > 1 and (not all(suffixes) or len(set(suffixes)) != len(suffixes)):
            raise ValueError(f"a metric's column suffixes must be distinct and non-empty, got {suffixes}")
        bad = [kind for _, kind in columns if kind not in SCORE_TYPES]
        if bad:
            raise ValueError(f"a metric's column types must be float32, float64 or int64, got {bad[0]!r}")
        primary = self.primary or columns[0][0]
        if primary not in suffixes:
            raise ValueError(f"a metric's primary column must be one of {suffixes}, got {primary!r}")
        if dict(columns)[primary] != self.score_type:
            raise ValueError(
                f"a metric's score_type is its primary column's type: {dict(columns)[primary]!r}, not {self.score_type!r}"
            )
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "primary", primary)

    @property
    def several_columns(self) -> bool:
        """Whether it adds more than one column (its scorer returns a tuple a row)."""
        return len(self.columns) > 1

    @property
    def primary_index(self) -> int:
        """The position of the primary column in :attr:`columns` (and in a row's tuple of scores)."""
        return [suffix for suffix, _ in self.columns].index(self.primary)

    def output_columns(self, score_column: str) -> list[tuple[str, str]]:
        """(name, Arrow type) of each column it adds to a table whose scores are named ``score_column``:
        ``score_column`` itself for one column, ``{score_column}_{suffix}`` each for several."""
        if not self.several_columns:
            return [(score_column, self.score_type)]
        return [(f"{score_column}_{suffix}", kind) for suffix, kind in self.columns]

    def primary_scores(self, scores: Sequence[Any]) -> list[Any]:
        """The primary column of a scorer's result (the result itself for a one-column metric)."""
        if not self.several_columns:
            return list(scores)
        index = self.primary_index
        return [row[index] for row in scores]

    def score_columns(self, scores: Sequence[Any]) -> list[list[Any]]:
        """A scorer's result as one list per column, in :attr:`columns` order."""
        if not self.several_columns:
            return [list(scores)]
        return [[row[i] for row in scores] for i in range(len(self.columns))]

    @property
    def loads_model(self) -> bool:
        """Whether it runs a model (an engine that spreads model work, such as Ray, has work to do)."""
        return "model" in self.settings

    def scorer(self, settings: ScoringSettings | None = None) -> Scorer:
        """This metric's scorer for ``settings`` (default settings when None)."""
        return self.make_scorer(settings if settings is not None else ScoringSettings())
