"""``simkernel score``: read a table, check every row, score it in chunks, write it back, summarise.

Order of work: the options are checked (usage errors, exit 2), the file is read and every row's texts
and label are checked BEFORE the model loads (so a bad row fails in milliseconds, naming its line,
exit 1), then the rows are scored in chunks of ``CHUNK_ROWS`` (the progress bar advances per chunk),
and only then is the output written (atomically), so a failed run writes nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from simkernel.cli.errors import DataError, UsageError
from simkernel.cli.io import Table, format_of, read_table, write_table
from simkernel.cli.modes import Scorer, english_only_note, make_scorer
from simkernel.cli.progress import ProgressBar
from simkernel.cli.summary import Summary, summarize
from simkernel.cli.thresholds import resolve_cli_threshold
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL

CHUNK_ROWS = 256  # rows per scoring call: the progress granularity (the encoder deduplicates within a call)
SUCCESS_COLUMN = "success"
DEFAULT_COLUMNS = {"predicted": "predicted", "ground_truth": "ground_truth", "references": "references"}
_MAX_LISTED_LINES = 5


@dataclass
class Inputs:
    """The checked texts of every row: ``predicted[i]`` and ``targets[i]`` (a ground truth string, a list
    of ground truths, or a list of references), and ``labels[i]`` (None where the row has no label)."""

    predicted: list[str] = field(default_factory=list)
    targets: list[Any] = field(default_factory=list)
    labels: list[float | None] | None = None


def run_score(args: argparse.Namespace) -> int:
    """Run the ``score`` sub-command; returns the exit status (errors are raised as CliError)."""
    started = time.perf_counter()
    _check_options(args)
    out_format = format_of(args.output, args.output_format)  # a bad extension fails before any work
    table = read_table(args.file, args.input_format)
    columns = columns_of(args)
    check_columns(table, columns, args)
    _check_added_columns(table, args)
    inputs = read_inputs(table, columns, args)
    threshold, threshold_notes = resolve_cli_threshold(args)

    scorer = make_scorer(args)
    load_s = score_s = 0.0
    scores: list[float] = []
    if len(table):
        load_started = time.perf_counter()
        scorer.load()
        score_started = time.perf_counter()
        load_s = score_started - load_started
        scores = score_in_chunks(scorer, inputs, enabled=not args.quiet)
        score_s = time.perf_counter() - score_started

    out_rows, out_columns = _output_rows(table, scores, threshold, args.score_column)
    write_table(out_rows, out_columns, args.output, out_format or table.format)
    summary = summarize(
        scores=scores,
        labels=inputs.labels,
        label_column=args.label,
        threshold=threshold,
        description=scorer.description,
        elapsed_s=time.perf_counter() - started,
        load_s=load_s,
        score_s=score_s,
        output=args.output,
        notes=[*threshold_notes, *scorer.notes, *_language_notes(args, inputs)],
    )
    if args.summary_json:
        write_summary_json(summary, args.summary_json)
    if not args.quiet:
        summary.print()
    return 0


def _language_notes(args: argparse.Namespace, inputs: Inputs) -> list[str]:
    if args.mode == "exact":
        return []
    note = english_only_note(args.model or DEFAULT_MODEL, inputs.predicted, inputs.targets)
    return [note] if note else []


def _check_options(args: argparse.Namespace) -> None:
    check_mode_options(args)
    if not args.score_column.strip():
        raise UsageError("--score-column must be a non-empty name")


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


def columns_of(args: argparse.Namespace) -> dict[str, str]:
    """Role -> column name for the chosen mode (the label is handled apart)."""
    if args.mode == "reference":
        return {
            "predicted": args.predicted or DEFAULT_COLUMNS["predicted"],
            "references": args.references or DEFAULT_COLUMNS["references"],
        }
    return {
        "predicted": args.predicted or DEFAULT_COLUMNS["predicted"],
        "ground_truth": args.ground_truth or DEFAULT_COLUMNS["ground_truth"],
    }


_FLAGS = {"predicted": "--predicted", "ground_truth": "--ground-truth", "references": "--references"}


def check_columns(table: Table, columns: dict[str, str], args: argparse.Namespace) -> None:
    """Every column the mode reads (and ``--label``) must be in the table; the error lists those found."""
    if table.format == "jsonl" and not table.rows:
        return  # no rows, so no keys: nothing to check (the output is empty too)
    found = ", ".join(table.columns) if table.columns else "none"
    for role, name in columns.items():
        if name not in table.columns:
            other_mode = ""
            if role == "ground_truth" and DEFAULT_COLUMNS["references"] in table.columns:
                other_mode = f", or score against {DEFAULT_COLUMNS['references']!r} with --mode reference"
            raise DataError(
                f"{table.source} has no column {name!r} (columns found: {found}); name the column of the {role.replace('_', ' ')} texts with {_FLAGS[role]} COLUMN{other_mode}"
            )
    if args.label is not None and args.label not in table.columns:
        raise DataError(
            f"{table.source} has no label column {args.label!r} (columns found: {found}); fix --label"
        )


def _check_added_columns(table: Table, args: argparse.Namespace) -> None:
    """The columns the output adds must not overwrite input columns."""
    added = [args.score_column]
    if args.threshold is not None or args.mode == "reference":
        added.append(SUCCESS_COLUMN)
    clash = [name for name in added if name in table.columns]
    if clash:
        fix = (
            "pass --score-column NAME to name the score column differently"
            if clash[0] == args.score_column
            else "rename that column in the input"
        )
        raise DataError(
            f"{table.source} already has a column {clash[0]!r}, which the output would overwrite; {fix}"
        )


class _RowProblems:
    """Collects one message per bad row; raises one error naming the first and the lines of the rest."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.first: str | None = None
        self.lines: list[int] = []

    def add(self, line: int, message: str) -> None:
        if self.first is None:
            self.first = f"{self.source} line {line}: {message}"
        if not self.lines or self.lines[-1] != line:
            self.lines.append(line)

    def raise_if_any(self) -> None:
        if self.first is None:
            return
        rest = self.lines[1:]
        more = ""
        if rest:
            shown = ", ".join(str(n) for n in rest[:_MAX_LISTED_LINES])
            plural = "s" if len(rest) > 1 else ""
            more = f" (and {len(rest)} more bad row{plural}: line{plural} {shown}"
            more += ", ..." if len(rest) > _MAX_LISTED_LINES else ""
            more += ")"
        raise DataError(self.first + more)


def read_inputs(table: Table, columns: dict[str, str], args: argparse.Namespace) -> Inputs:
    """Check and extract every row's texts and label; every bad row is counted, the first one named."""
    problems = _RowProblems(table.source)
    inputs = Inputs(labels=[] if args.label is not None else None)
    target_role = "references" if args.mode == "reference" else "ground_truth"
    for row, line in zip(table.rows, table.line_numbers, strict=True):
        predicted = _text(row, columns["predicted"], "--predicted", line, problems, args.allow_empty)
        if target_role == "references":
            target = _references(row, columns["references"], line, problems, args.allow_empty, table.format)
        else:
            target = _ground_truth(row, columns["ground_truth"], line, problems, args, table.format)
        inputs.predicted.append(predicted if predicted is not None else "")
        inputs.targets.append(target)
        if inputs.labels is not None:
            inputs.labels.append(_label(row, args.label, line, problems))
    problems.raise_if_any()
    return inputs


_EMPTY_HINT = "fill it in, or pass --allow-empty to score empty texts as the evaluators do"


def _text(
    row: dict, column: str, flag: str, line: int, problems: _RowProblems, allow_empty: bool
) -> str | None:
    if column not in row:  # JSONL rows may lack a key
        problems.add(line, f"no {column!r} field; every row needs the {flag} column")
        return None
    value = _as_text(row[column])
    if value is None:
        problems.add(line, f"column {column!r} holds {_describe(row[column])} where a text is expected")
        return None
    if not value.strip() and not allow_empty:
        problems.add(line, f"column {column!r} is empty; {_EMPTY_HINT}")
        return None
    return value


def _as_text(value: Any) -> str | None:
    """A cell as text: strings as they are, JSON numbers in their JSON spelling; None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    return None


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return f"a JSON {type(value).__name__} ({json.dumps(value, ensure_ascii=False)[:40]})"


def _ground_truth(
    row: dict, column: str, line: int, problems: _RowProblems, args: argparse.Namespace, fmt: str
) -> Any:
    value = row.get(column)
    if args.mode == "sas" and fmt == "jsonl" and isinstance(value, list):
        # several correct answers for one question (JSONL only): the score is the max over them
        if not value:
            problems.add(
                line, f"column {column!r} is an empty list: no ground truth; give at least one answer"
            )
            return []
        return _text_list(value, column, line, problems, args.allow_empty, "ground truths")
    return _text(row, column, "--ground-truth", line, problems, args.allow_empty)


def _references(
    row: dict, column: str, line: int, problems: _RowProblems, allow_empty: bool, fmt: str
) -> Any:
    if column not in row:
        problems.add(line, f"no {column!r} field; every row needs the --references column")
        return []
    value = row[column]
    if isinstance(value, str) and fmt != "jsonl":
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            problems.add(
                line,
                f"column {column!r} is not a JSON list ({exc.msg} at column {exc.colno}); "
                "write the references "
                'as a JSON list of strings, e.g. ["Paris", "the city of Paris"]',
            )
            return []
    if not isinstance(value, list):
        problems.add(
            line,
            f"column {column!r} holds {_describe(value)} where a list of reference texts is expected, "
            'e.g. ["Paris", "the city of Paris"]',
        )
        return []
    return _text_list(value, column, line, problems, allow_empty, "references")


def _text_list(
    values: list, column: str, line: int, problems: _RowProblems, allow_empty: bool, what: str
) -> list[str]:
    texts: list[str] = []
    for index, item in enumerate(values):
        text = _as_text(item)
        if text is None:
            problems.add(line, f"item {index} of the {what} in {column!r} is {_describe(item)}, not a text")
            return []
        if not text.strip() and not allow_empty:
            problems.add(line, f"item {index} of the {what} in {column!r} is empty; {_EMPTY_HINT}")
            return []
        texts.append(text)
    return texts


def _label(row: dict, column: str, line: int, problems: _RowProblems) -> float | None:
    """A human label as a float; None for an empty cell or null (the row is scored, not correlated)."""
    value = row.get(column)
    if value is None or isinstance(value, str) and not value.strip():
        return None
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        problems.add(line, f"label column {column!r} holds {value!r}, not a number; labels must be numeric")
        return None
    return number if math.isfinite(number) else None


def score_in_chunks(scorer: Scorer, inputs: Inputs, enabled: bool) -> list[float]:
    total = len(inputs.predicted)
    scores: list[float] = []
    with ProgressBar(total, "scoring", enabled=None if enabled else False) as bar:
        for start in range(0, total, CHUNK_ROWS):
            stop = min(total, start + CHUNK_ROWS)
            chunk = scorer.score(inputs.predicted[start:stop], inputs.targets[start:stop])
            if len(chunk) != stop - start:  # pragma: no cover - a contract violation of the scoring API
                raise DataError(f"the scorer returned {len(chunk)} scores for {stop - start} rows")
            scores.extend(chunk)
            bar.update(stop - start)
    return scores


def _output_rows(
    table: Table, scores: list[float], threshold: float | None, score_column: str
) -> tuple[list[dict[str, Any]], list[str]]:
    columns = [*table.columns, score_column]
    if threshold is not None:
        columns.append(SUCCESS_COLUMN)
    rows = []
    for row, score in zip(table.rows, scores, strict=True):
        out = dict(row)
        out[score_column] = score
        if threshold is not None:
            out[SUCCESS_COLUMN] = bool(score >= threshold)
        rows.append(out)
    return rows, columns


def write_summary_json(summary: Summary, path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(summary.as_dict(), handle, ensure_ascii=False, indent=2)
            handle.write("\n")
    except OSError as exc:
        raise DataError(f"cannot write --summary-json {path!r}: {exc.strerror or exc}") from None
