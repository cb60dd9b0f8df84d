"""``simkernel calibrate``: score a labelled file, then find the threshold that best matches the labels.

The file is read and checked exactly as ``simkernel score`` reads it (same formats, columns, errors,
``--allow-empty``), every row before the model loads; rows with an empty label are left out and counted.
The scores come from the same scorers as ``score`` (``sas`` or ``reference`` mode), the threshold from
:func:`simkernel.calibrate`. The report goes to stdout; ``--output-json`` writes ``Calibration.to_dict()``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from simkernel.batch.engines import score_in_chunks
from simkernel.batch.job import ScoreJob
from simkernel.batch.rows import ChunkInputs as Inputs
from simkernel.batch.rows import columns_of, read_inputs
from simkernel.batch.score import check_mode_options
from simkernel.errors import DataError
from simkernel.tables.whole import read_table

FIXED_THRESHOLD = 0.7  # eval_lib's default, shown for comparison


def run_calibrate(args: argparse.Namespace) -> int:
    """Run the ``calibrate`` sub-command; returns the exit status (errors are raised as InputError)."""
    from simkernel.calibration import calibrate
    from simkernel.calibration.binary import stats_of

    started = time.perf_counter()
    job = ScoreJob.from_namespace(args)
    check_mode_options(job)
    table = read_table(job.file, job.input_format)
    inputs = read_inputs(table, columns_of(job), job)
    all_labels = inputs.labels or []
    keep = [i for i, label in enumerate(all_labels) if label is not None]
    labels: list[float] = [label for label in all_labels if label is not None]
    if len(keep) < 2:
        raise DataError(
            f"{table.source} has {len(keep)} row(s) with a label in {args.label!r}; calibration needs at least 2 labelled rows of both kinds"
        )
    labelled = Inputs(
        predicted=[inputs.predicted[i] for i in keep],
        targets=[inputs.targets[i] for i in keep],
        labels=[all_labels[i] for i in keep],
    )
    settings = job.settings
    scorer = job.metric.scorer(settings)
    scorer.load()
    scores = score_in_chunks(scorer, labelled, enabled=not args.quiet)
    model, precision = settings.model, settings.precision
    try:
        result = calibrate(
            scores,
            labels,
            positive_from=args.positive_from,
            bootstrap=args.bootstrap,
            seed=args.seed,
            model=model,
            precision_mode=precision,
        )
    except ValueError as exc:
        raise DataError(f"{table.source}: {exc}") from None
    positive = [label >= result.positive_from for label in labels]
    fixed = stats_of(scores, positive, FIXED_THRESHOLD)
    if args.output_json:
        _write_json(result.to_dict(), args.output_json)
    if not args.quiet:
        lines = report_lines(result, fixed, scorer.description, table.source, len(table) - len(keep))
        lines.append(f"  time        {time.perf_counter() - started:.2f} s")
        print("\n".join(lines), file=sys.stdout)
    return 0


def report_lines(result, fixed, description: str, source: str, unlabelled: int) -> list[str]:
    """The human-readable report of a :class:`~simkernel.calibration.Calibration`."""
    rule = (
        f"label >= {result.positive_from:g} ({result.positive_rule}; --positive-from V to change)"
        if result.positive_rule != "given"
        else f"label >= {result.positive_from:g} (--positive-from)"
    )
    out = [f"simkernel calibrate: {result.n} labelled rows of {source}, {description}"]
    if unlabelled:
        out.append(f"  left out    {unlabelled} row(s) with an empty label")
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


def _figures(stats) -> str:
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
