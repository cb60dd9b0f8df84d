"""``simkernel.calibrate_file``: what ``simkernel calibrate`` runs, from Python.

The file is read and checked exactly as ``simkernel score`` reads it (same formats, columns, errors,
``allow_empty``), every row before the model loads; rows with an empty label are left out and counted.
The scores come from the metric's scorer (the scoring core), the threshold from
:func:`simkernel.calibration.calibrate`. The result is a :class:`CalibrationReport`: the
:class:`~simkernel.calibration.Calibration`, the figures at eval_lib's fixed threshold beside it, and the
report's lines (what ``simkernel calibrate`` prints).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from simkernel.batch.engines import score_in_chunks
from simkernel.batch.job import ScoreJob
from simkernel.batch.rows import ChunkInputs, columns_of, read_inputs
from simkernel.batch.score import check_mode_options, write_output_json
from simkernel.batch.summary import brackets, figure_intervals
from simkernel.calibration.fit import DEFAULT_BOOTSTRAP, DEFAULT_SEED, IN_SAMPLE_NOTE
from simkernel.errors import DataError, UsageError
from simkernel.stats.defaults import DEFAULT_RESAMPLES, resamples_problem
from simkernel.tables.table_format import check_output_paths
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
    figures: dict[str, Any] | None = None
    scores: Any = None
    labels: Any = None

    def lines(self) -> list[str]:
        """The report ``simkernel calibrate`` prints on stdout."""
        return [*report_lines(self), f"  time        {self.elapsed_s:.2f} s"]

    def as_dict(self) -> dict[str, Any]:
        """``--output-json``'s object: the calibration's ``to_dict()`` and, under ``figures``, the mean
        score, Pearson and Spearman against the labels, and precision and recall at the threshold, each
        with its 95% interval."""
        figures = self.figures
        result = self.calibration
        if figures is not None and result.interval is not None:
            threshold = {
                "estimate": result.threshold,
                "low": result.interval[0],
                "high": result.interval[1],
                "level": 0.95,
                "method": "percentile bootstrap",
                "resamples": result.bootstrap,
                "seed": result.seed,
            }
            figures = {**figures, "intervals": {**figures["intervals"], "threshold": threshold}}
        return {**result.to_dict(), "figures": figures}


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
    resamples: int = DEFAULT_RESAMPLES,
    report: str | os.PathLike | None = None,
    **options: Any,
) -> CalibrationReport:
    """Score every labelled row of the table ``input`` with ``metric`` and find the threshold on the
    scores that best reproduces the labels ``label >= positive_from`` (default: the midpoint of the lowest
    and highest label); the same run as ``simkernel calibrate INPUT --label LABEL --mode METRIC``.

    :param input: a CSV, TSV, JSONL or Parquet file (by extension, or ``input_format=``), ``"-"``: stdin.
    :param metric: a metric that runs a model (``"sas"``, ``"reference"``, or a plugin's).
    :param bootstrap: resamples for the threshold's 95% interval (0: none, else at least 1,000); ``seed``
        theirs.
    :param output_json: also write ``report.as_dict()`` to this path.
    :param resamples: bootstrap resamples of the figures' 95% intervals (the mean score, Pearson,
        Spearman; ``seed`` theirs too; 0: none, else at least 1,000); precision and recall get Wilson's
        interval.
    :param report: also write an HTML report with charts to this path (the plot extra).
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
    if report is not None:
        from simkernel.batch.report import require_plotting

        require_plotting()  # a missing extra is named before any work
    for name, value in (("--resamples", resamples), ("--bootstrap", bootstrap)):
        problem = resamples_problem(value)
        if problem:
            raise UsageError(f"{name} {problem}")
    check_output_paths({"--output-json": output_json, "--report": report}, [os.fspath(input)])
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
    calibration_report = CalibrationReport(
        calibration=result,
        fixed=fixed,
        description=scorer.description,
        source=table.source,
        unlabelled=len(table) - len(keep),
        elapsed_s=time.perf_counter() - started,
        figures=figures_with_intervals(scores, labels, positive, result.threshold, resamples, seed),
        scores=scores,
        labels=labels,
    )
    if output_json is not None:
        write_output_json(calibration_report.as_dict(), os.fspath(output_json))
    if report is not None:
        from simkernel.batch.report import write_calibrate_report

        texts = {
            "rows": [table.rows[i] for i in keep],
            "lines": [table.line_numbers[i] for i in keep],
            "columns": list(columns_of(job).values()),
            "label": label,
        }
        write_calibrate_report(calibration_report, os.fspath(report), texts)
    return calibration_report


def figures_with_intervals(
    scores, labels, positive, threshold: float, resamples: int, seed: int
) -> dict[str, Any]:
    """The figures of a calibration with their intervals: the mean score, Pearson's r and Spearman's rho
    against the labels (BCa bootstrap over rows), precision and recall at ``threshold`` (Wilson's)."""
    import numpy as np

    from simkernel.stats.correlation import pearson, spearman
    from simkernel.stats.intervals import wilson

    x = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    truth = np.asarray(positive, dtype=bool)
    # every row is labelled: the mean and the correlations from one bootstrap run, as score's summary
    intervals, reasons = figure_intervals(x, np.ones(x.size, dtype=bool), y, resamples, seed)
    predicted = x >= threshold
    tp = int(np.count_nonzero(predicted & truth))
    rates = {"precision": wilson(tp, int(predicted.sum())), "recall": wilson(tp, int(truth.sum()))}
    figures: dict[str, Any] = {
        "mean_score": float(x.mean()),
        "pearson": pearson(x, y),
        "spearman": spearman(x, y),
        "precision": tp / int(predicted.sum()) if predicted.any() else 0.0,
        "recall": tp / int(truth.sum()),
        "threshold": threshold,
        "resamples": resamples,
        "seed": seed,
    }
    intervals.update({name: rate.as_dict() if rate is not None else None for name, rate in rates.items()})
    figures["intervals"] = intervals
    if rates["precision"] is None:
        reasons["precision"] = "no row scored at or above the threshold"
    figures["no_interval"] = reasons
    return figures


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
    if result.recommended:
        out.append(f"  use it      simkernel score FILE --threshold {result.threshold:.4f}")
    else:
        out.append(f"  no threshold recommended: {result.warning}")
    figures = report.figures
    if figures:
        found, why = figures["intervals"], figures.get("no_interval", {})

        def ci(name: str) -> str:
            return brackets(found[name], why.get(name))

        out.append(f"  mean score  {figures['mean_score']:.4f}{ci('mean_score')}")
        out.append(
            f"  vs labels   Pearson {_value(figures['pearson'])}{ci('pearson')}, "
            f"Spearman {_value(figures['spearman'])}{ci('spearman')}"
        )
        out.append(
            f"  at {result.threshold:.4f} precision {figures['precision']:.4f}{ci('precision')}, "
            f"recall {figures['recall']:.4f}{ci('recall')}"
        )
        out.append(f"              {IN_SAMPLE_NOTE}")
        if figures["resamples"]:
            out.append(
                f"  intervals   95%: BCa bootstrap over rows ({figures['resamples']:,} resamples, seed {figures['seed']}; --resamples, --seed); precision and recall Wilson score at the chosen threshold"
            )
    return out


def _value(value: float | None) -> str:
    return "n/a" if value is None or value != value else f"{value:.4f}"


def _figures(stats: Any) -> str:
    return (
        f"precision {stats.precision:.4f}  recall {stats.recall:.4f}  F1 {stats.f1:.4f}  "
        f"kappa {stats.kappa:.4f}"
    )
