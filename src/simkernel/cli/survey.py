"""What ``simkernel score`` learns about its whole input by checking every row, before or while it scores.

The local engine checks every row in a pass of its own before the model loads (a bad row fails in moments).
``--engine ray`` on a CSV, TSV or Parquet file checks each chunk as the driver reads it for the workers
(:func:`checked_as_read`), so the driver reads the input once less and its reading overlaps the scoring.
The guarantee stays: a bad row stops the run before its chunk is handed to a worker, the rest of the input
is checked to name every bad row in the one error, and the output folder beside OUT is removed, so no
row of that run reaches OUT (:class:`BadInput`). JSONL keeps the pass of its own: its columns (the keys
of every row) must be known before the first row is written.
"""

from __future__ import annotations

import argparse
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from simkernel.cli.errors import DataError
from simkernel.cli.modes import non_latin_rows
from simkernel.cli.rows import Chunk, ChunkInputs, RowChecker, RowProblems


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


def tally(survey: Survey, inputs: ChunkInputs, args: argparse.Namespace) -> None:
    """Add one checked chunk's rows, labels and note counts to ``survey``."""
    survey.rows += len(inputs)
    if survey.labels is not None:
        survey.labels.extend(float("nan") if v is None else v for v in inputs.labels or ())
    if args.mode != "exact":
        survey.non_latin += non_latin_rows(inputs.predicted, inputs.targets)
    if args.mode == "reference":
        survey.no_references += sum(1 for refs in inputs.targets if not refs)


def checked_as_read(
    chunks: Iterator[Chunk], checker: RowChecker, problems: RowProblems, survey: Survey, args, skip: int
) -> Iterator[ChunkInputs]:
    """The checked inputs of the chunks from row ``skip`` on, each checked (and tallied into ``survey``)
    as it is read; the chunks before ``skip`` (scored by an earlier run) are checked and tallied only.
    The first chunk with a bad row raises :class:`BadInput` after the rest are checked, naming them all."""
    try:
        for chunk in chunks:
            inputs = checker.check(chunk.rows, chunk.lines, problems)
            if problems.first is not None:
                for rest in chunks:
                    checker.check(rest.rows, rest.lines, problems)
                problems.raise_if_any()
            tally(survey, inputs, args)
            if chunk.first >= skip:
                yield inputs
    except BadInput:
        raise
    except DataError as exc:
        raise BadInput(str(exc)) from None


def read_as_bad_input(chunks: Iterator[Chunk]) -> Iterator[Chunk]:
    """``chunks``, a line that cannot be read raised as :class:`BadInput`."""
    try:
        yield from chunks
    except BadInput:
        raise
    except DataError as exc:
        raise BadInput(str(exc)) from None


def rows_at_most(path: str, fmt: str) -> int:
    """An upper bound of the rows of a CSV/TSV file (its lines, counted by their ends, less the header's:
    a row takes one line or more), the exact count of a Parquet file (its metadata); read fast."""
    if fmt == "parquet":
        from simkernel.cli.parquet import parquet_rows

        return parquet_rows(path, path)
    newlines = returns = 0
    last = b""
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            newlines += block.count(b"\n")
            returns += block.count(b"\r")
            last = block[-1:]
    lines = max(newlines, returns) + (0 if last in (b"\n", b"\r") else 1)
    return max(0, lines - 1)
