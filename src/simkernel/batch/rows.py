"""Checking the rows of ``simkernel score`` and taking out what each mode scores.

:class:`RowChecker` turns one chunk of rows into :class:`ChunkInputs` (the texts the scorer needs and
the labels) and records every bad row in :class:`RowProblems`, which raises one error naming the first
bad row and the lines of the others. The same checker runs twice over the input: once over every row
before the model loads (the problems, the labels, the notes), and once per chunk while scoring.
"""

from __future__ import annotations

import decimal
import json
import math
from dataclasses import dataclass, field
from typing import Any

from simkernel.batch.job import ScoreJob
from simkernel.errors import DataError
from simkernel.tables.formats import table_format
from simkernel.tables.text import number_text

DEFAULT_COLUMNS = {"predicted": "predicted", "ground_truth": "ground_truth", "references": "references"}
FLAGS = {"predicted": "--predicted", "ground_truth": "--ground-truth", "references": "--references"}
_MAX_LISTED_LINES = 5
_EMPTY_HINT = "fill it in, or pass --allow-empty to score empty texts as the evaluators do"


@dataclass
class ChunkInputs:
    """The checked texts of a chunk's rows: ``predicted[i]`` and ``targets[i]`` (a ground truth string, a
    list of ground truths, or a list of references), and ``labels[i]`` (None where the row has none, and
    ``labels`` None when no --label was given)."""

    predicted: list[str] = field(default_factory=list)
    targets: list[Any] = field(default_factory=list)
    labels: list[float | None] | None = None

    def __len__(self) -> int:
        return len(self.predicted)


class RowProblems:
    """Collects one message per bad row; raises one error naming the first and the lines of the rest.

    ``unit`` is what a position counts: ``"line"`` in text files, ``"row"`` in Parquet files.
    """

    def __init__(self, source: str, unit: str = "line") -> None:
        self.source = source
        self.unit = unit
        self.first: str | None = None
        self.lines: list[int] = []

    def add(self, line: int, message: str) -> None:
        if self.first is None:
            self.first = f"{self.source} {self.unit} {line}: {message}"
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
            more = f" (and {len(rest)} more bad row{plural}: {self.unit}{plural} {shown}"
            more += ", ..." if len(rest) > _MAX_LISTED_LINES else ""
            more += ")"
        raise DataError(self.first + more)


def columns_of(args: ScoreJob) -> dict[str, str]:
    """Role -> column name for the job's metric: the predicted texts and the metric's target role (the
    label is handled apart)."""
    target = args.metric.target
    return {
        "predicted": args.predicted or DEFAULT_COLUMNS["predicted"],
        target: getattr(args, target) or DEFAULT_COLUMNS[target],
    }


def check_columns(
    columns: dict[str, str], found_columns: list[str], source: str, args: ScoreJob, fmt: str | None = None
) -> None:
    """Every column the mode reads (and ``--label``) must be among ``found_columns``; the error lists them,
    or says what the header of a ``fmt`` file shows instead (a CSV separated by semicolons)."""
    # a name with a line break or another unprintable character is shown quoted: the error stays one line
    found = ", ".join(c if c.isprintable() else repr(c) for c in found_columns) if found_columns else "none"
    for role, name in columns.items():
        if name not in found_columns:
            hint = table_format(fmt).header_hint(found_columns) if fmt is not None else None
            if hint is not None:
                raise DataError(f"{source} has no column {name!r}: {hint}")
            other_mode = ""
            if role == "ground_truth" and DEFAULT_COLUMNS["references"] in found_columns:
                other_mode = f", or score against {DEFAULT_COLUMNS['references']!r} with --mode reference"
            raise DataError(
                f"{source} has no column {name!r} (columns found: {found}); name the column of the {role.replace('_', ' ')} texts with {FLAGS[role]} COLUMN"
                + other_mode
            )
    if args.label is not None and args.label not in found_columns:
        raise DataError(f"{source} has no label column {args.label!r} (columns found: {found}); fix --label")


def read_inputs(table: Any, columns: dict[str, str], args: ScoreJob) -> ChunkInputs:
    """The checked inputs of every row of a whole :class:`~simkernel.tables.formats.Table` (its columns checked
    first); every bad row is counted, the first one named."""
    if table.rows or not table_format(table.format).keyed_rows:  # JSONL without rows has no keys to check
        check_columns(columns, table.columns, table.source, args, table.format)
    problems = RowProblems(table.source, table_format(table.format).unit)
    inputs = RowChecker(args, columns, table.format).check(table.rows, table.line_numbers, problems)
    problems.raise_if_any()
    return inputs


class RowChecker:
    """Checks rows of one input against the options of one run.

    ``fmt`` is the input format: in JSONL and Parquet a cell may hold a list (several ground truths, the
    references), in CSV/TSV the references are a JSON list written as text.
    """

    def __init__(self, args: ScoreJob, columns: dict[str, str], fmt: str) -> None:
        self.args = args
        self.columns = columns
        self.fmt = fmt
        self.lists_in_cells = table_format(fmt).lists_in_cells
        self.json_cells = table_format(fmt).keyed_rows
        self.metric = args.metric

    def check(self, rows: list[dict], lines: list[int], problems: RowProblems) -> ChunkInputs:
        """The inputs of ``rows`` (``lines[i]`` is where row ``i`` starts); bad rows go to ``problems``."""
        args, columns = self.args, self.columns
        inputs = ChunkInputs(labels=[] if args.label is not None else None)
        for row, line in zip(rows, lines, strict=True):
            predicted = _text(row, columns["predicted"], "--predicted", line, problems, args.allow_empty)
            if self.metric.target == "references":
                target = self._references(row, line, problems)
            else:
                target = self._ground_truth(row, line, problems)
            inputs.predicted.append(predicted if predicted is not None else "")
            inputs.targets.append(target)
            if inputs.labels is not None and args.label is not None:
                inputs.labels.append(_label(row, args.label, line, problems))
        return inputs

    def _ground_truth(self, row: dict, line: int, problems: RowProblems) -> Any:
        column = self.columns["ground_truth"]
        value = row.get(column)
        if self.metric.several_targets and self.lists_in_cells and isinstance(value, (list, tuple)):
            # several correct answers for one question (JSONL, Parquet): the score is the max over them
            if not value:
                problems.add(
                    line, f"column {column!r} is an empty list: no ground truth; give at least one answer"
                )
                return []
            return _text_list(value, column, line, problems, self.args.allow_empty, "ground truths")
        return _text(row, column, "--ground-truth", line, problems, self.args.allow_empty)

    def _references(self, row: dict, line: int, problems: RowProblems) -> Any:
        column = self.columns["references"]
        if column not in row:
            problems.add(line, f"no {column!r} field; every row needs the --references column")
            return []
        value = row[column]
        if isinstance(value, str) and not self.json_cells:
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
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list):
            problems.add(
                line,
                f"column {column!r} holds {_describe(value)} where a list of reference texts is expected, "
                'e.g. ["Paris", "the city of Paris"]',
            )
            return []
        return _text_list(value, column, line, problems, self.args.allow_empty, "references")


def _text(
    row: dict, column: str, flag: str, line: int, problems: RowProblems, allow_empty: bool
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
    """A cell as text: strings as they are, numbers as the input held them (a JSON number as its file
    spells it, a Parquet float32 in float32's shortest form), the same text a CSV output writes for them;
    None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return number_text(value)
    return None


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    try:
        shown = json.dumps(value, ensure_ascii=False)[:40]
    except (TypeError, ValueError):  # a Parquet value JSON cannot hold (a timestamp, bytes)
        return f"a {type(value).__name__} value ({repr(value)[:40]})"
    return f"a JSON {type(value).__name__} ({shown})"


def _text_list(
    values: list | tuple, column: str, line: int, problems: RowProblems, allow_empty: bool, what: str
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


def _label(row: dict, column: str, line: int, problems: RowProblems) -> float | None:
    try:
        return parse_label(row.get(column), column)
    except ValueError as exc:
        problems.add(line, str(exc))
        return None


def parse_label(value: Any, column: str) -> float | None:
    """A human label as a float, the one rule of ``score``, ``calibrate`` and ``compare``: a number or
    numeric text; a JSON boolean as 1 / 0; None for an empty cell or null (the row has no label: it is
    scored, not correlated). Anything else raises ValueError naming the column and the value: text, and
    NaN or an infinity (never read as a missing label: leave the cell empty for that)."""
    if value is None or isinstance(value, str) and not value.strip():
        return None
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"label column {column!r} holds {value!r}, not a number; labels must be numeric"
        ) from None
    if not math.isfinite(number):
        raise ValueError(
            f"label column {column!r} holds {value!r}, not a finite number; leave the cell empty for a row without a label"
        )
    return number
