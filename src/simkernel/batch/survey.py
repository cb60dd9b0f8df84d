"""What ``simkernel score`` learns about its whole input by checking every row, before or while it scores.

The local engine checks every row in a pass of its own before the model loads (a bad row fails in moments).
``--engine ray`` writing a file from a CSV, TSV or Parquet file checks each chunk as the driver reads it
for the workers (:func:`checked_as_read`), so the driver reads the input once less and its reading
overlaps the scoring.
The guarantee stays: a bad row stops the run before its chunk is handed to a worker, the rest of the input
is checked to name every bad row in the one error, and the output folder beside OUT is removed, so no
row of that run reaches OUT (:class:`BadInput`). JSONL to JSONL streams the same way, its keys gathered as
read and checked as the checking pass checks them (a column no row has, an added column a row already
has); JSONL to CSV, TSV or Parquet keeps the pass of its own: the output's header or schema is every row's
keys, known only at the end; so does any output to stdout, where printed rows could not be taken back.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from simkernel.batch.job import ScoreJob
from simkernel.batch.rows import ChunkInputs, RowChecker, RowProblems, check_columns
from simkernel.errors import DataError
from simkernel.scoring.notes import non_latin_rows
from simkernel.tables.chunk import Chunk
from simkernel.tables.writers import check_added_columns


class BadInput(DataError):
    """A bad row, or a line that cannot be read, found while scoring: nothing of the run is kept."""


@dataclass
class Survey:
    """What the checking of the whole input learns: its rows, columns (JSONL: every key, in the order
    first seen), labels (NaN where a row has none), and the counts behind the summary's notes.
    ``rows_at_most`` bounds ``rows`` from above before the rows are counted (when they are counted while
    scoring, ``streaming``)."""

    rows: int = 0
    columns: dict[str, None] = field(default_factory=dict)
    labels: array | None = None
    non_latin: int = 0
    no_references: int = 0
    arrow_schema: Any = None
    schema_error: DataError | None = None
    streaming: bool = False
    rows_at_most: int = 0

    @property
    def expected_rows(self) -> int:
        return self.rows_at_most if self.streaming else self.rows


def tally(survey: Survey, inputs: ChunkInputs, args: ScoreJob) -> None:
    """Add one checked chunk's rows, labels and note counts to ``survey``."""
    survey.rows += len(inputs)
    if survey.labels is not None:
        survey.labels.extend(float("nan") if v is None else v for v in inputs.labels or ())
    metric = args.metric
    if metric.loads_model:
        survey.non_latin += non_latin_rows(inputs.predicted, inputs.targets)
    if metric.target == "references":
        survey.no_references += sum(1 for refs in inputs.targets if not refs)


def checked_as_read(
    chunks: Iterator[Chunk],
    checker: RowChecker,
    problems: RowProblems,
    survey: Survey,
    args,
    skip: int,
    jsonl_source: str | None = None,
) -> Iterator[ChunkInputs]:
    """The checked inputs of the chunks from row ``skip`` on, each checked (and tallied into ``survey``)
    as it is read; the chunks before ``skip`` (scored by an earlier run) are checked and tallied only.
    The first chunk with a bad row raises :class:`BadInput` after the rest are checked, naming them all.

    JSONL (``jsonl_source``, the input's name, given): each row's keys join ``survey.columns`` as read; an
    added column that a row already has stops the run as a bad row does, and the whole file's keys are
    checked at its end (or when it stops) with the checking pass's errors and in its order: a column of
    the mode that no row has, then the added columns, then the bad rows."""
    read = 0  # rows read, the bad ones too
    try:
        for chunk in chunks:
            inputs = checker.check(chunk.rows, chunk.lines, problems)
            read += _add_keys(survey, chunk.rows, jsonl_source)
            if problems.first is not None or _clash(survey, jsonl_source, args):
                for rest in chunks:
                    checker.check(rest.rows, rest.lines, problems)
                    read += _add_keys(survey, rest.rows, jsonl_source)
                _check_keys(survey, checker, jsonl_source, args, read)
                problems.raise_if_any()
            tally(survey, inputs, args)
            if chunk.first >= skip:
                yield inputs
        _check_keys(survey, checker, jsonl_source, args, read)
    except BadInput:
        raise
    except DataError as exc:
        raise BadInput(str(exc)) from None


def check_table_columns(
    columns: dict[str, str], found_columns: list[str], source: str, args, fmt: str | None = None
) -> None:
    """A table's columns against a run: every column the mode reads (and ``--label``) is among
    ``found_columns``, and none that the output adds is (DataError naming the column and the fix);
    ``fmt``: the table's format, whose header may say why a column is missing."""
    check_columns(columns, found_columns, source, args, fmt)
    check_added_columns(found_columns, source, args)


def _add_keys(survey: Survey, rows: list[dict], jsonl_source: str | None) -> int:
    """JSONL: the keys of ``rows`` join ``survey.columns`` in the order first seen. Returns len(rows)."""
    if jsonl_source is not None:
        for row in rows:
            survey.columns.update(dict.fromkeys(row))
    return len(rows)


def _clash(survey: Survey, jsonl_source: str | None, args) -> bool:
    """Whether a JSONL row read so far has a column the output adds."""
    if jsonl_source is None:
        return False
    try:
        check_added_columns(list(survey.columns), jsonl_source, args)
    except DataError:
        return True
    return False


def _check_keys(survey: Survey, checker: RowChecker, jsonl_source: str | None, args, read: int) -> None:
    """The checking pass's checks of a JSONL file's keys (none without rows: no keys to check)."""
    if jsonl_source is not None and read:
        check_table_columns(checker.columns, list(survey.columns), jsonl_source, args)


def read_as_bad_input(chunks: Iterator[Chunk]) -> Iterator[Chunk]:
    """``chunks``, a line that cannot be read raised as :class:`BadInput`."""
    try:
        yield from chunks
    except BadInput:
        raise
    except DataError as exc:
        raise BadInput(str(exc)) from None
