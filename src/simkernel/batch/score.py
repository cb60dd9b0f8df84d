"""The batch engine: read a table, check every row, score it chunk by chunk, write it back, summarise.

:func:`run_job` runs one :class:`~simkernel.batch.job.ScoreJob` (``simkernel.score_file`` and ``simkernel
score`` both call it) and returns its :class:`~simkernel.batch.summary.Summary`.

Order of work: the options are checked (usage errors, exit 2); the input is read once through, chunk by
chunk, checking every row's texts and label BEFORE the model loads (a missing column or a bad row fails
in moments, naming its line, exit 1, and nothing is written); then it is read again, ``--chunk-rows``
rows at a time, each chunk scored and appended to the output beside OUT, which replaces OUT only when
every row is in (:mod:`simkernel.tables.partial`). Memory holds about one chunk, plus 16 bytes per row
for the scores and labels of the summary. ``--engine ray`` scores the chunks on a Ray cluster
(:mod:`simkernel.ray.engine`); the output is the same. Writing a file from CSV, TSV or Parquet (or
JSONL to JSONL) it checks each chunk as it reads it for the workers instead of in a pass of its own
(:mod:`simkernel.batch.survey`): a bad row then fails the run once the workers have started, and still
nothing is written (to stdout it keeps the pass: printed rows could not be taken back).
"""

from __future__ import annotations

import json
import time
from array import array
from typing import Any

from simkernel.batch.engines import file_set_runner, make_engine
from simkernel.batch.fingerprint import fingerprint
from simkernel.batch.job import STDIO, ScoreJob
from simkernel.batch.progress import ProgressBar
from simkernel.batch.rows import RowChecker, RowProblems, columns_of
from simkernel.batch.summary import Summary, summarize
from simkernel.batch.survey import (
    BadInput,
    Survey,
    check_table_columns,
    checked_as_read,
    read_as_bad_input,
    tally,
)
from simkernel.batch.thresholds import resolve_cli_threshold
from simkernel.errors import DataError, Interrupted, UsageError
from simkernel.scoring.notes import english_only_note, no_references_note
from simkernel.stats.defaults import resamples_problem
from simkernel.tables.file_sets import is_file_set
from simkernel.tables.formats import format_of, require_format_support, rows_at_most, table_format
from simkernel.tables.partial import PartialOutput, print_notice
from simkernel.tables.readers import TableReader, open_table
from simkernel.tables.table_format import check_output_paths
from simkernel.tables.writers import OutputLayout, StdoutOutput


def run_job(args: ScoreJob) -> Summary:
    """Run one job; returns its summary (errors are raised as :class:`~simkernel.errors.InputError`)."""
    started = time.perf_counter()
    _check_options(args)
    # an output that could only fail (or replace the input) once every row is scored fails now
    check_output_paths(output_paths(args), [] if is_file_set(args.file) else [args.file])
    threshold, threshold_notes = resolve_cli_threshold(args)
    out_format = format_of(args.output, args.output_format)  # a bad extension fails before any work
    require_format_support(out_format)  # a missing extra is named before any work
    require_format_support(args.input_format)
    if args.report is not None:
        from simkernel.batch.report import require_plotting

        require_plotting()  # a missing extra is named before any work
    run_file_set = file_set_runner(args) if is_file_set(args.file) else None
    if run_file_set is not None:
        output, survey, engine, load_s, score_s = run_file_set(args, threshold, out_format)
    else:
        output, survey, engine, load_s, score_s = _score_file(args, threshold, out_format)
    notes = [*threshold_notes, *engine.notes, *_notes(args, survey)]
    if output.rows_done != survey.rows:  # pragma: no cover - the input changed while it was scored
        raise DataError(f"{args.file} changed while it was being scored; score it again")
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
        columns=[name for name, _ in args.metric.output_columns(args.score_column)],
        primary=args.metric.primary_index,
        resamples=args.resamples,
        seed=args.seed,
    )
    if args.summary_json:
        write_summary_json(summary, args.summary_json)
    if args.report is not None:
        from simkernel.batch.report import write_score_report

        write_score_report(args, summary, output.scores, survey.labels)
    return summary


def output_paths(args: ScoreJob) -> dict[str, str | None]:
    """The files a run writes, by option (None: not written)."""
    return {"--output": args.output, "--summary-json": args.summary_json, "--report": args.report}


def _score_file(args: ScoreJob, threshold: float | None, out_format: str | None) -> tuple:
    """Check and score one file (or stdin); returns (output, survey, engine, load_s, score_s)."""
    with open_table(args.file, args.input_format) as reader:
        out_format = out_format or reader.format
        require_format_support(out_format)
        columns = columns_of(args)
        checker = RowChecker(args, columns, reader.format)
        survey = _survey(reader, checker, columns, args, out_format)
        layout = _layout(reader, survey, args, out_format, threshold)
        engine = make_engine(args)
        output = _open_output(args, reader, layout, survey.expected_rows)
        try:
            load_s, score_s = _score(reader, checker, engine, output, survey, args)
        finally:
            engine.close()
    return output, survey, engine, load_s, score_s


def _check_options(args: ScoreJob) -> None:
    check_mode_options(args)
    if not args.score_column.strip():
        raise UsageError("--score-column must be a non-empty name")
    problem = resamples_problem(args.resamples)
    if problem:
        raise UsageError(f"--resamples {problem}")
    if isinstance(args.seed, bool) or not isinstance(args.seed, int) or args.seed < 0:
        raise UsageError(f"--seed must be a whole number >= 0, got {args.seed!r}")
    if args.engine != "ray" and (args.address is not None or args.workers is not None):
        raise UsageError("--address and --workers apply to --engine ray only; add --engine ray or drop them")
    if args.engine != "ray" and getattr(args, "ray_in_flight", None) is not None:
        raise UsageError("--ray-in-flight applies to --engine ray only; add --engine ray or drop it")
    if args.engine == "ray" and args.cache_dir is not None:
        raise UsageError(
            "--cache-dir applies to --engine local only (Ray workers keep no embedding cache); drop it"
        )
    if args.engine == "ray" and args.metric.local_only:
        raise UsageError(
            f"--engine ray does not apply to --mode {args.mode} (it loads no model and runs locally at millions of rows/s); drop --engine ray"
        )
    if args.resume and args.file == STDIO:
        raise UsageError("--resume needs FILE to be a file: stdin cannot be read again; save it to a file")
    if args.resume and args.output == STDIO:
        raise UsageError("--resume needs --output OUT: what went to stdout cannot be continued")


# job field -> the command line's flag, for the options a metric may not take
_FLAGS = {
    "ground_truth": "--ground-truth",
    "references": "--references",
    "aggregation": "--aggregation",
    "model": "--model",
    "precision": "--precision",
    "batch_size": "--batch-size",
    "threads": "--threads",
    "cache_dir": "--cache-dir",
}


def check_mode_options(args: ScoreJob) -> None:
    """Reject options that do not apply to the job's metric (exit 2), rather than ignoring them: the
    column of the target role it does not read, and the settings it does not take."""
    metric = args.metric
    takes = {metric.target} | set(metric.settings)
    given = [flag for name, flag in _FLAGS.items() if name not in takes and getattr(args, name) is not None]
    if given:
        raise UsageError(
            f"{', '.join(given)} does not apply to --mode {args.mode}; drop it or choose another --mode"
        )
    unknown = sorted(set(args.metric_options or {}) - set(metric.options))
    if unknown:
        takes_text = ", ".join(sorted(metric.options)) or "none"
        raise UsageError(
            f"--metric-option {', '.join(unknown)} does not apply to --mode {args.mode} (its options: {takes_text}); drop it or choose another --mode"
        )


def _survey(
    reader: TableReader, checker: RowChecker, columns: dict[str, str], args, out_format: str
) -> Survey:
    """The checking pass: every row read and checked, nothing scored; raises the first problem found.
    ``--engine ray`` writing a file from CSV, TSV or Parquet (or JSONL to JSONL) checks the header only here
    and every row while it scores (:mod:`simkernel.batch.survey`)."""
    source_format = table_format(reader.format)
    jsonl = source_format.keyed_rows  # the columns are the rows' keys: known once every row is read
    if not jsonl:
        check_table_columns(columns, reader.columns, reader.source, args, reader.format)
    problems = RowProblems(reader.source, reader.unit)
    survey = Survey(columns=dict.fromkeys(reader.columns), labels=array("d") if args.label else None)
    if source_format.typed:  # its schema, which a typed output keeps (also when it has no rows)
        survey.arrow_schema = source_format.header_columns(reader.path)[1]
    # stdout keeps the pass: rows printed before a bad row is found could not be taken back
    if args.engine == "ray" and args.output != STDIO and (not jsonl or table_format(out_format).keyed_rows):
        survey.streaming = True
        survey.rows_at_most = rows_at_most(reader.path, reader.format)
        return survey
    infer_schema = table_format(out_format).typed and jsonl
    for chunk in reader.chunks(args.chunk_rows):
        inputs = checker.check(chunk.rows, chunk.lines, problems)
        tally(survey, inputs, args)
        if jsonl:
            for row in chunk.rows:
                survey.columns.update(dict.fromkeys(row))
        if infer_schema and survey.schema_error is None:
            try:
                survey.arrow_schema = table_format(out_format).widen_schema(
                    survey.arrow_schema, chunk.rows, list(survey.columns), reader.source
                )
            except DataError as exc:
                survey.schema_error = exc
    if jsonl and survey.rows:
        check_table_columns(columns, list(survey.columns), reader.source, args)
    problems.raise_if_any()
    if survey.schema_error is not None:
        raise survey.schema_error
    return survey


def _layout(
    reader: TableReader, survey: Survey, args, out_format: str, threshold: float | None
) -> OutputLayout:
    schema = table_format(out_format).output_schema(
        table_format(reader.format), list(survey.columns), survey.arrow_schema
    )
    return output_layout(args, out_format, list(survey.columns), threshold, schema)


def output_layout(
    args: ScoreJob, out_format: str, input_columns: list[str], threshold: float | None, schema: Any
) -> OutputLayout:
    """The output's layout: the input's columns, then the metric's score columns (and success)."""
    metric = args.metric
    return OutputLayout(
        out_format,
        input_columns,
        metric.output_columns(args.score_column),
        threshold,
        schema,
        primary=metric.primary_index,
    )


def _open_output(
    args, reader: TableReader, layout: OutputLayout, total_rows: int
) -> StdoutOutput | PartialOutput:
    if args.output == STDIO:
        return StdoutOutput(layout)
    notice = (lambda message: None) if args.quiet else print_notice
    return PartialOutput(
        args.output,
        layout,
        fingerprint(args, reader.path, reader.format),
        args.resume,
        notice,
        total_rows=total_rows,
    )


def _score(
    reader: TableReader, checker: RowChecker, engine, output, survey: Survey, args
) -> tuple[float, float]:
    """The scoring pass; returns (model load seconds, scoring seconds)."""
    skip = output.rows_done
    total = survey.expected_rows
    load_s = score_s = 0.0
    problems = RowProblems(reader.source, reader.unit)
    if survey.streaming:  # each chunk checked as it is read for the engine
        jsonl_source = reader.source if table_format(reader.format).keyed_rows else None
        inputs = checked_as_read(
            reader.chunks(args.chunk_rows), checker, problems, survey, args, skip, jsonl_source
        )
    else:
        inputs = (checker.check(c.rows, c.lines, problems) for c in reader.chunks(args.chunk_rows, skip))
    try:
        if total > skip:
            load_started = time.perf_counter()
            engine.load()
            score_started = time.perf_counter()
            load_s = score_started - load_started
            chunks = read_as_bad_input(reader.chunks(args.chunk_rows, skip))
            with ProgressBar(total, "scoring", enabled=False if args.quiet else None, initial=skip) as bar:
                for chunk, scores in zip(chunks, engine.scores(inputs, total - skip), strict=True):
                    if len(scores) != len(chunk):  # pragma: no cover - a contract violation of the engine
                        raise DataError(f"the scorer returned {len(scores)} scores for {len(chunk)} rows")
                    output.commit(output.layout.render(chunk, scores), scores)
                    bar.update(len(chunk))
            score_s = time.perf_counter() - score_started
        if survey.streaming:
            for _ in inputs:  # nothing left to score (the rows an earlier run scored): checked and counted
                pass
        output.finish()
    except KeyboardInterrupt:
        output.keep_for_resume()
        if args.output == STDIO:
            raise Interrupted("interrupted; the output on stdout is incomplete") from None
        kept = f"; the {output.rows_done} rows scored so far are kept: rerun with --resume to continue"
        raise Interrupted(
            f"interrupted; {args.output} was not touched" + (kept if output.rows_done else "")
        ) from None
    except BaseException as exc:
        # rows already committed are kept for --resume (a cluster failure hours in should not cost them);
        # a bad row found while scoring leaves nothing of this run, as when the checking pass finds it first
        bad_row = isinstance(exc, BadInput) and not output.resumed_rows
        if output.rows_done and not bad_row:
            output.keep_for_resume()
        else:
            output.discard()
        raise
    return load_s, score_s


def _notes(args: ScoreJob, survey: Survey) -> list[str]:
    notes = []
    if args.metric.loads_model:
        note = english_only_note(args.settings.model, survey.non_latin)
        if note:
            notes.append(note)
    note = no_references_note(survey.no_references)
    if note:
        notes.append(note)
    return notes


def write_output_json(data: dict, path: str) -> None:
    """``data`` as indented UTF-8 JSON in ``path`` (the ``--output-json`` of calibrate and compare)."""
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=2)
            handle.write("\n")
    except OSError as exc:
        raise DataError(f"cannot write --output-json {path!r}: {exc.strerror or exc}") from None


def write_summary_json(summary: Summary, path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(summary.as_dict(), handle, ensure_ascii=False, indent=2)
            handle.write("\n")
    except OSError as exc:
        raise DataError(f"cannot write --summary-json {path!r}: {exc.strerror or exc}") from None
