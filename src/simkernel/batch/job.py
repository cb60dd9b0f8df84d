"""One batch job, typed: what ``simkernel.score_file`` and ``simkernel score`` run.

The command line parses its arguments into a :class:`ScoreJob` (``ScoreJob.from_namespace``) and the
Python API builds one from keyword arguments: the batch engine, the Ray driver and its workers see only
this object, never ``argparse``. Field names are the command line's option names (``--chunk-rows`` is
``chunk_rows``); None means "the metric's or the engine's default", as an unset option does.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from simkernel.scoring.metric import Metric
from simkernel.scoring.registry import get_metric
from simkernel.scoring.settings import ScoringSettings
from simkernel.stats.defaults import DEFAULT_RESAMPLES, DEFAULT_SEED

__all__ = ["DEFAULT_CHUNK_ROWS", "STDIO", "ScoreJob"]

DEFAULT_CHUNK_ROWS = 10_000  # rows read, scored and written at a time
STDIO = "-"


@dataclass
class ScoreJob:
    """Every setting of one scoring run of a table (see ``simkernel score --help`` for each one).

    - ``file``: the input (a path, ``"-"`` for stdin, or with ``engine="ray"`` a folder or glob of files);
      ``output``: the output path or ``"-"`` for stdout; ``input_format`` / ``output_format``: csv, tsv,
      jsonl or parquet where the extension does not say;
    - ``mode``: the metric's name (:func:`simkernel.scoring.metric_names`); ``predicted``, ``ground_truth``,
      ``references``: column names (default: the role's name); ``label``: a column of human labels;
    - ``model``, ``precision``, ``batch_size``, ``threads``, ``cache_dir``, ``aggregation``: the metric's
      :class:`~simkernel.scoring.ScoringSettings`; ``metric_options``: the metric's own settings (name ->
      value, e.g. bertscore's ``layer``); ``threshold``: a number or ``"calibrated"``;
    - ``score_column``, ``allow_empty``, ``chunk_rows``, ``resume``, ``quiet``, ``summary_json``;
    - ``resamples`` and ``seed``: the bootstrap of the summary's 95% intervals (0 resamples: none);
      ``report``: also write an HTML report with charts to this path (the plot extra);
    - ``engine``: ``"local"`` or ``"ray"``; ``address``, ``workers``, ``ray_in_flight``: the Ray engine's.
    """

    file: str
    output: str = STDIO
    mode: str = "sas"
    predicted: str | None = None
    ground_truth: str | None = None
    references: str | None = None
    label: str | None = None
    score_column: str = "score"
    model: str | None = None
    precision: str | None = None
    batch_size: int | None = None
    threads: int | None = None
    cache_dir: str | None = None
    aggregation: str | None = None
    metric_options: dict[str, Any] | None = None
    threshold: float | str | None = None
    allow_empty: bool = False
    input_format: str | None = None
    output_format: str | None = None
    summary_json: str | None = None
    quiet: bool = True
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    resume: bool = False
    engine: str = "local"
    address: str | None = None
    workers: int | None = None
    ray_in_flight: int | None = None
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    report: str | None = None

    @classmethod
    def from_namespace(cls, namespace: Any) -> ScoreJob:
        """The job of a parsed command line (its attributes named as the fields; others ignored)."""
        return cls(**{f.name: getattr(namespace, f.name) for f in fields(cls) if hasattr(namespace, f.name)})

    @property
    def metric(self) -> Metric:
        """The registry's metric named by ``mode`` (ValueError listing the known ones)."""
        return get_metric(self.mode)

    @property
    def settings(self) -> ScoringSettings:
        """The metric's settings: the options given, the defaults for the rest."""
        return ScoringSettings.from_options(
            model=self.model,
            precision=self.precision,
            threads=self.threads,
            batch_size=self.batch_size,
            cache_dir=self.cache_dir,
            aggregation=self.aggregation,
            options=dict(self.metric_options) if self.metric_options else None,
        )

    def as_options(self) -> dict[str, Any]:
        """The fields as a plain dict (shipped to Ray workers, which rebuild the job)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
