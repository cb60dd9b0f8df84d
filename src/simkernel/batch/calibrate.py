"""``simkernel.calibrate_file``: what ``simkernel calibrate`` runs, from Python.

The file is read and checked exactly as ``simkernel score`` reads it (same formats, columns, errors,
``allow_empty``), every row before the model loads; rows with an empty label are left out and counted.
The scores come from the metric's scorer (the scoring core), the threshold from
:func:`simkernel.calibration.calibrate`. The result is a :class:`CalibrationReport`: the
:class:`~simkernel.calibration.Calibration`, the figures at eval_lib's fixed threshold beside it, and the
report's lines (what ``simkernel calibrate`` prints).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from simkernel.batch.engines import score_in_chunks
from simkernel.batch.job import ScoreJob
from simkernel.batch.rows import ChunkInputs, columns_of, read_inputs
from simkernel.batch.score import check_mode_options
from simkernel.calibration.fit import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from simkernel.errors import DataError, UsageError
from simkernel.tables.whole import read_table

__all__ = ["FIXED_THRESHOLD", "CalibrationReport", "calibrate_file"]

FIXED_THRESHOLD = 0.7  # eval_lib's default, shown for comparison


@dataclass
class CalibrationReport:
    """One calibration of a labelled file: ``calibration`` (the threshold and its figures; its
    ``to_dict()`` is ``--output-json``'s object), ``fixed`` (the figures at :data:`FIXED_THRESHOLD`),
    ``description`` (the metric and model), ``source`` (the file's name), ``unlabelled`` (rows left out
    for an empty label) and ``elapsed_s``."""

    calibration: Any
    fixed: Any
    description: str
    source: str
    unlabelled: int
    elapsed_s: float

    def lines(self) -> list[str]:
        """The report ``simkernel calibrate`` prints on stdout."""
        return [*report_lines(self), f"  time        {self.elapsed_s:.2f} s"]


def calibrate_file(
    input: str | os.PathLike,
    *,
    label: str,
    metric: str = "sas",
    positive_from: float | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    output_json: str | os.PathLike | None = None,
    progress: bool = False,
    **options: Any,
) -> CalibrationReport:
    """Score every labelled row of the table ``input`` with ``metric`` and find the threshold on the
    scores that best reproduces the labels ``label >= positive_from`` (default: the midpoint of the lowest
    and highest label); the same run as ``simkernel calibrate INPUT --label LABEL --mode METRIC``.

    :param input: a CSV, TSV, JSONL or Parquet file (by extension, or ``input_format=``), ``"-"``: stdin.
    :param metric: a metric that runs a model (``"sas"``, ``"reference"``, or a plugin's).
    :param bootstrap: resamples for the threshold's 95% interval (0: none); ``seed`` theirs.
    :param output_json: also write ``report.calibration.to_dict()`` to this path.
    :param progress: show the progress bar on a terminal.
    :param options: the columns and settings, named as ``simkernel calibrate``'s options
        (``ground_truth=``, ``predicted=``, ``references=``, ``model=``, ``precision=``, ``aggregation=``,
        ``batch_size=``, ``threads=``, ``cache_dir=``, ``allow_empty=``, ``input_format=``); a misspelt
        one raises TypeError.
    :raises UsageError: settings that do not apply (also a ``ValueError``); :raises DataError: bad input.
    """
    from simkernel.calibration import calibrate
    from simkernel.calibration.binary import stats_of

    started = time.perf_counter()
    job = ScoreJob(file=os.fspath(input), mode=metric, label=label, quiet=not progress, **options)
    if not job.metric.loads_model:
        raise UsageError(
            f"calibrate needs a metric that runs a model; {metric!r} runs none: choose sas, reference or another such metric"
        )
    check_mode_options(job)
    table = read_table(job.file, job.input_format)
    inputs = read_inputs(table, columns_of(job), job)
    all_labels = inputs.labels or []
    keep = [i for i, value in enumerate(all_labels) if value is not None]
    labels: list[float] = [value for value in all_labels if value is not None]
    if len(keep) < 2:
        raise DataError(
            f"{table.source} has {len(keep)} row(s) with a label in {label!r}; calibration needs at least 2 labelled rows of both kinds"
        )
    labelled = ChunkInputs(
        predicted=[inputs.predicted[i] for i in keep],
        targets=[inputs.targets[i] for i in keep],
        labels=[all_labels[i] for i in keep],
    )
    settings = job.settings
    scorer = job.metric.scorer(settings)
    scorer.load()
    scores = job.metric.primary_scores(score_in_chunks(scorer, labelled, enabled=progress))
    try:
        result = calibrate(
            scores,
            labels,
            positive_from=positive_from,
            bootstrap=bootstrap,
            seed=seed,
            model=settings.model,
            precision_mode=settings.precision,
        )
    except ValueError as exc:
        raise DataError(f"{table.source}: {exc}") from None
    positive = [value >= result.positive_from for value in labels]
    fixed = stats_of(scores, positive, FIXED_THRESHOLD)
    if output_json is not None:
        _write_json(result.to_dict(), os.fspath(output_json))
    return CalibrationReport(
        calibration=result,
        fixed=fixed,
        description=scorer.description,
        source=table.source,
        unlabelled=len(table) - len(keep),
        elapsed_s=time.perf_counter() - started,
    )


def report_lines(report: CalibrationReport) -> list[str]:
    """The human-readable report of a calibration (without the time line)."""
    result, fixed = report.calibration, report.fixed
    rule = (
        f"label >= {result.positive_from:g} ({result.positive_rule}; --positive-from V to change)"
        if result.positive_rule != "given"
        else f"label >= {result.positive_from:g} (--positive-from)"
    )
    out = [f"simkernel calibrate: {result.n} labelled rows of {report.source}, {report.description}"]
    if report.unlabelled:
        out.append(f"  left out    {report.unlabelled} row(s) with an empty label")
    out.append(f"  positive    {rule}: {result.positives} of {result.n}")
    interval = (
        f"95% interval {result.interval[0]:.4f} to {result.interval[1]:.4f} "
        f"({result.bootstrap} bootstrap resamples, seed {result.seed})"
        if result.interval is not None
        else "no interval (--bootstrap 0)"
    )
    out.append(f"  best F1     threshold {result.threshold:.4f}, {interval}")
    out.append(f"              {_figures(result.best)}")
    out.append(f"  Youden's J  threshold {result.youden_threshold:.4f} (J {result.youden.youden_j:.4f})")
    out.append(f"              {_figures(result.youden)}")
    out.append(f"  fixed {FIXED_THRESHOLD:g}   eval_lib's default, for comparison")
    out.append(f"              {_figures(fixed)}")
    out.append(f"  use it      simkernel score FILE --threshold {result.threshold:.4f}")
    return out


def _figures(stats: Any) -> str:
    return (
        f"precision {stats.precision:.4f}  recall {stats.recall:.4f}  F1 {stats.f1:.4f}  "
        f"kappa {stats.kappa:.4f}"
    )


def _write_json(data: dict, path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=2)
            handle.write("\n")
    except OSError as exc:
        raise DataError(f"cannot write --output-json {path!r}: {exc.strerror or exc}") from None
