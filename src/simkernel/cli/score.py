"""``simkernel score``: read a table, check every row, score it chunk by chunk, write it back, summarise.

Order of work: the options are checked (usage errors, exit 2); the input is read once through, chunk by
chunk, checking every row's texts and label BEFORE the model loads (a missing column or a bad row fails
in moments, naming its line, exit 1, and nothing is written); then it is read again, ``--chunk-rows``
rows at a time, each chunk scored and appended to the output beside OUT, which replaces OUT only when
every row is in (:mod:`simkernel.cli.partial`). Memory holds about one chunk, plus 16 bytes per row
for the scores and labels of the summary. ``--engine ray`` scores the chunks on a Ray cluster
(:mod:`simkernel.cli.ray_engine`); the output is the same.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from array import array
from dataclasses import dataclass, field
from typing import Any

from simkernel.cli.engines import make_engine
from simkernel.cli.errors import CliError, DataError, UsageError
from simkernel.cli.io import STDIO, format_of
from simkernel.cli.modes import english_only_note, no_references_note, non_latin_rows
from simkernel.cli.partial import PartialOutput, print_notice
from simkernel.cli.progress import ProgressBar
from simkernel.cli.readers import TableReader, open_table
from simkernel.cli.rows import RowChecker, RowProblems, check_columns, columns_of
from simkernel.cli.summary import Summary, summarize
from simkernel.cli.thresholds import resolve_cli_threshold
from simkernel.cli.writers import SUCCESS_COLUMN, OutputLayout, StdoutOutput
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL


class Interrupted(CliError):
    """Ctrl-C while scoring: exit status 130, what was committed is kept for --resume."""

    exit_code = 130


@dataclass
class Survey:
    """What the checking pass learns about the whole input: its rows, columns (JSONL: every key, in the
    order first seen), labels (NaN where a row has none), and the counts behind the summary's notes."""

    rows: int = 0
    columns: dict[str, None] = field(default_factory=dict)
    labels: array | None = None
    non_latin: int = 0
    no_references: int = 0
    arrow_schema: Any = None
    schema_error: DataError | None = None


def run_score(args: argparse.Namespace) -> int:
    """Run the ``score`` sub-command; returns the exit status (errors are raised as CliError)."""
    started = time.perf_counter()
    _check_options(args)
    threshold, threshold_notes = resolve_cli_threshold(args)
    out_format = format_of(args.output, args.output_format)  # a bad extension fails before any work
    if out_format == "parquet" or args.input_format == "parquet":
        from simkernel.cli.parquet import pyarrow

        pyarrow()  # the missing extra is named before any work
    with open_table(args.file, args.input_format) as reader:
        out_format = out_format or reader.format
        if out_format == "parquet":
            from simkernel.cli.parquet import pyarrow

            pyarrow()
        columns = columns_of(args)
        checker = RowChecker(args, columns, reader.format)
        survey = _survey(reader, checker, columns, args, out_format)
        layout = _layout(reader, survey, args, out_format, threshold)
        engine = make_engine(args)
        output = _open_output(args, reader, layout, survey.rows)
        try:
            load_s, score_s = _score(reader, checker, engine, output, survey, args)
        finally:
            engine.close()
    notes = [*threshold_notes, *engine.notes, *_notes(args, survey)]
    if output.rows_done != survey.rows:  # pragma: no cover - the input changed while it was scored
        raise DataError(f"{reader.source} changed while it was being scored; score it again")
    scored_now = output.rows_done - output.resumed_rows
    if output.resumed_rows:
        notes.append(
            f"resumed: {output.resumed_rows} rows came from the interrupted run, {scored_now} scored now"
        )
    summary = summarize(
        scores=output.scores,
        labels=survey.labels,
        label_column=args.label,
        threshold=threshold,
        description=engine.description,
        elapsed_s=time.perf_counter() - started,
        load_s=load_s,
        score_s=score_s,
        output=args.output,
        notes=notes,
        scored_rows=scored_now,
    )
    if args.summary_json:
        write_summary_json(summary, args.summary_json)
    if not args.quiet:
        summary.print()
    return 0


def _check_options(args: argparse.Namespace) -> None:
    check_mode_options(args)
    if not args.score_column.strip():
        raise UsageError("--score-column must be a non-empty name")
    if args.engine != "ray" and (args.address is not None or args.workers is not None):
        raise UsageError("--address and --workers apply to --engine ray only; add --engine ray or drop them")
    if args.engine != "ray" and getattr(args, "ray_in_flight", None) is not None:
        raise UsageError("--ray-in-flight applies to --engine ray only; add --engine ray or drop it")
    if args.engine == "ray" and args.cache_dir is not None:
        raise UsageError(
            "--cache-dir applies to --engine local only (Ray workers keep no embedding cache); drop it"
        )
    if args.engine == "ray" and args.mode == "exact":
        raise UsageError(
            "--engine ray does not apply to --mode exact (it loads no model and runs locally at millions of rows/s); drop --engine ray"
        )
    if args.resume and args.file == STDIO:
        raise UsageError("--resume needs FILE to be a file: stdin cannot be read again; save it to a file")
    if args.resume and args.output == STDIO:
        raise UsageError("--resume needs --output OUT: what went to stdout cannot be continued")


def check_mode_options(args: argparse.Namespace) -> None:
    """Reject options that do not apply to the chosen mode (exit 2), rather than ignoring them."""
    not_for = {
        "sas": {"references": "--references", "aggregation": "--aggregation"},
        "reference": {"ground_truth": "--ground-truth"},
        "exact": {
            "references": "--references",
            "aggregation": "--aggregation",
            "model": "--model",
            "precision": "--precision",
            "batch_size": "--batch-size",
            "threads": "--threads",
            "cache_dir": "--cache-dir",
        },
    }[args.mode]
    given = [flag for name, flag in not_for.items() if getattr(args, name) is not None]
    if given:
        raise UsageError(
            f"{', '.join(given)} does not apply to --mode {args.mode}; drop it or choose another --mode"
        )


def _check_added_columns(found_columns: list[str], source: str, args: argparse.Namespace) -> None:
    """The columns the output adds must not overwrite input columns."""
    added = [args.score_column]
    if args.threshold is not None or args.mode == "reference":
        added.append(SUCCESS_COLUMN)
    clash = [name for name in added if name in found_columns]
    if clash:
        fix = (
            "pass --score-column NAME to name the score column differently"
            if clash[0] == args.score_column
            else "rename that column in the input"
        )
        raise DataError(
            f"{source} already has a column {clash[0]!r}, which the output would overwrite; {fix}"
        )


def _survey(
    reader: TableReader, checker: RowChecker, columns: dict[str, str], args, out_format: str
) -> Survey:
    """The checking pass: every row read and checked, nothing scored; raises the first problem found."""
    jsonl = reader.format == "jsonl"
    if not jsonl:
        check_columns(columns, reader.columns, reader.source, args)
        _check_added_columns(reader.columns, reader.source, args)
    problems = RowProblems(reader.source, reader.unit)
    survey = Survey(columns=dict.fromkeys(reader.columns), labels=array("d") if args.label else None)
    infer_schema = out_format == "parquet" and jsonl
    for chunk in reader.chunks(args.chunk_rows):
        inputs = checker.check(chunk.rows, chunk.lines, problems)
        survey.rows += len(chunk)
        if survey.labels is not None:
            survey.labels.extend(float("nan") if v is None else v for v in inputs.labels or ())
        if args.mode != "exact":
            survey.non_latin += non_latin_rows(inputs.predicted, inputs.targets)
        if args.mode == "reference":
            survey.no_references += sum(1 for refs in inputs.targets if not refs)
        if jsonl:
            for row in chunk.rows:
                survey.columns.update(dict.fromkeys(row))
        if infer_schema and survey.schema_error is None:
            from simkernel.cli.parquet import unify

            try:
                survey.arrow_schema = unify(
                    survey.arrow_schema, chunk.rows, list(survey.columns), reader.source
                )
            except DataError as exc:
                survey.schema_error = exc
    if jsonl and survey.rows:
        check_columns(columns, list(survey.columns), reader.source, args)
        _check_added_columns(list(survey.columns), reader.source, args)
    problems.raise_if_any()
    if survey.schema_error is not None:
        raise survey.schema_error
    return survey


def _layout(
    reader: TableReader, survey: Survey, args, out_format: str, threshold: float | None
) -> OutputLayout:
    from simkernel.cli.parquet import SCORE_TYPES, input_schema

    schema = None
    if out_format == "parquet" and reader.format != "parquet":
        schema = input_schema(list(survey.columns), reader.format, survey.arrow_schema)
    return OutputLayout(
        out_format, list(survey.columns), args.score_column, threshold, SCORE_TYPES[args.mode], schema
    )


def _fingerprint(args, reader: TableReader) -> dict[str, Any]:
    """What makes a run's output: the input file (path, size, modification time) and every option that
    changes the output (not the engine, threads or batch size: scores do not depend on them)."""
    stat = os.stat(reader.path)
    return {
        "input": os.path.abspath(reader.path),
        "input_bytes": stat.st_size,
        "input_mtime_ns": stat.st_mtime_ns,
        "input_format": reader.format,
        "output_format": args.output_format or format_of(args.output),
        "mode": args.mode,
        "columns": columns_of(args),
        "label": args.label,
        "model": args.model or (DEFAULT_MODEL if args.mode != "exact" else None),
        "precision": args.precision,
        "aggregation": args.aggregation,
        "threshold": args.threshold,
        "score_column": args.score_column,
        "allow_empty": args.allow_empty,
        "chunk_rows": args.chunk_rows,
    }


def _open_output(
    args, reader: TableReader, layout: OutputLayout, total_rows: int
) -> StdoutOutput | PartialOutput:
    if args.output == STDIO:
        return StdoutOutput(layout)
    notice = (lambda message: None) if args.quiet else print_notice
    return PartialOutput(
        args.output, layout, _fingerprint(args, reader), args.resume, notice, total_rows=total_rows
    )


def _score(
    reader: TableReader, checker: RowChecker, engine, output, survey: Survey, args
) -> tuple[float, float]:
    """The scoring pass; returns (model load seconds, scoring seconds)."""
    skip = output.rows_done
    load_s = score_s = 0.0
    try:
        if survey.rows > skip:
            load_started = time.perf_counter()
            engine.load()
            score_started = time.perf_counter()
            load_s = score_started - load_started
            problems = RowProblems(reader.source, reader.unit)
            inputs = (checker.check(c.rows, c.lines, problems) for c in reader.chunks(args.chunk_rows, skip))
            chunks = reader.chunks(args.chunk_rows, skip)
            with ProgressBar(
                survey.rows, "scoring", enabled=False if args.quiet else None, initial=skip
            ) as bar:
                for chunk, scores in zip(chunks, engine.scores(inputs, survey.rows - skip), strict=True):
                    if len(scores) != len(chunk):  # pragma: no cover - a contract violation of the engine
                        raise DataError(f"the scorer returned {len(scores)} scores for {len(chunk)} rows")
                    output.commit(output.layout.render(chunk, scores), scores)
                    bar.update(len(chunk))
            score_s = time.perf_counter() - score_started
        output.finish()
    except KeyboardInterrupt:
        output.keep_for_resume()
        if args.output == STDIO:
            raise Interrupted("interrupted; the output on stdout is incomplete") from None
        kept = f"; the {output.rows_done} rows scored so far are kept: rerun with --resume to continue"
        raise Interrupted(
            f"interrupted; {args.output} was not touched" + (kept if output.rows_done else "")
        ) from None
    except BaseException:
        # rows already committed are kept for --resume (a cluster failure hours in should not cost them)
        if output.rows_done:
            output.keep_for_resume()
        else:
            output.discard()
        raise
    return load_s, score_s


def _notes(args: argparse.Namespace, survey: Survey) -> list[str]:
    notes = []
    if args.mode != "exact":
        note = english_only_note(args.model or DEFAULT_MODEL, survey.non_latin)
        if note:
            notes.append(note)
    note = no_references_note(survey.no_references)
    if note:
        notes.append(note)
    return notes


def write_summary_json(summary: Summary, path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(summary.as_dict(), handle, ensure_ascii=False, indent=2)
            handle.write("\n")
    except OSError as exc:
        raise DataError(f"cannot write --summary-json {path!r}: {exc.strerror or exc}") from None
