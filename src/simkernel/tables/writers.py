"""The output of ``simkernel score``, chunk by chunk: every input row with the scores (and success) added.

:class:`OutputLayout` turns a scored chunk into what the output format writes (bytes for CSV, TSV and
JSONL, a pyarrow Table for Parquet: the format's module decides). :class:`StdoutOutput` writes the chunks
to stdout as they come; a file goes through :class:`simkernel.tables.partial.PartialOutput`.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from simkernel.errors import DataError
from simkernel.tables.formats import table_format

SUCCESS_COLUMN = "success"


def check_added_columns(found_columns: list[str], source: str, args: Any) -> None:
    """The columns the output adds (the metric's score columns, and success where a threshold applies)
    must not overwrite input columns."""
    metric = args.metric
    scores = [name for name, _ in metric.output_columns(args.score_column)]
    added = list(scores)
    if args.threshold is not None or metric.default_threshold is not None:
        added.append(SUCCESS_COLUMN)
    clash = [name for name in added if name in found_columns]
    if clash:
        fix = (
            "pass --score-column NAME to name the score column differently"
            if clash[0] in scores
            else "rename that column in the input"
        )
        raise DataError(
            f"{source} already has a column {clash[0]!r}, which the output would overwrite; {fix}"
        )


def render_rows(rows: Iterable[dict[str, Any]], columns: Sequence[str], fmt: str, header: bool) -> bytes:
    """The bytes of ``rows`` in the text format ``fmt`` (with a header line where it has one and
    ``header``), UTF-8."""
    return table_format(fmt).render_rows(rows, columns, header)


class OutputLayout:
    """How the scored rows are written: the format, the columns (input ones plus the score columns, and
    success when a threshold applies), and for Parquet the pyarrow schema of the input columns.

    ``score_columns`` are the (name, Arrow type) of the columns the metric adds; with one, a chunk's
    scores are one number a row, with several one tuple a row (in that order), and success reads the
    one at ``primary``."""

    def __init__(
        self,
        fmt: str,
        input_columns: Sequence[str],
        score_columns: Sequence[tuple[str, str]],
        threshold: float | None,
        arrow_schema: Any = None,
        primary: int = 0,
    ) -> None:
        self.format = fmt
        self.table_format = table_format(fmt)
        self.score_columns = list(score_columns)
        self.threshold = threshold
        self.arrow_schema = arrow_schema
        self.primary = primary
        self.columns = [*input_columns, *(name for name, _ in self.score_columns)]
        if threshold is not None:
            self.columns.append(SUCCESS_COLUMN)

    @property
    def width(self) -> int:
        """Numbers a row's scores hold (one per score column)."""
        return len(self.score_columns)

    def header(self) -> bytes:
        """What the output starts with before any row (the CSV/TSV header line; nothing otherwise)."""
        return self.table_format.header(self.columns)

    def by_column(self, scores: Sequence[Any]) -> list[list[Any]]:
        """A chunk's scores as one list per score column."""
        if self.width == 1:
            return [list(scores)]
        return [[row[i] for row in scores] for i in range(self.width)]

    def flat(self, scores: Sequence[Any]) -> list[float]:
        """A chunk's scores as numbers, row after row (what the summary and ``--resume`` keep)."""
        if self.width == 1:
            return list(scores)
        return [value for row in scores for value in row]

    def successes(self, scores: Sequence[Any]) -> list[bool] | None:
        if self.threshold is None:
            return None
        primary = scores if self.width == 1 else [row[self.primary] for row in scores]
        return [bool(score >= self.threshold) for score in primary]

    def added(self) -> list[tuple[str, str]]:
        """(name, Arrow type) of every column the output adds."""
        success = [(SUCCESS_COLUMN, "bool")] if self.threshold is not None else []
        return [*self.score_columns, *success]

    def render(self, chunk: Any, scores: Sequence[Any]) -> Any:
        """The output of one chunk: bytes (CSV, TSV, JSONL, no header) or a pyarrow Table (Parquet)."""
        values = self.by_column(scores)
        successes = self.successes(scores)
        if successes is not None:
            values.append(successes)
        added = [(name, kind, column) for (name, kind), column in zip(self.added(), values, strict=True)]
        return self.table_format.render_chunk(chunk, self.columns, added, self.arrow_schema)

    def empty(self) -> Any:
        """The output of an input without rows (a Parquet table of the columns; text: nothing)."""
        return self.table_format.empty_output(self.added(), self.arrow_schema)


class StdoutOutput:
    """Chunks written to stdout as they are scored (no temporary file; nothing to resume). Nothing is
    written before the first chunk is scored, so an error loading the model leaves stdout empty."""

    def __init__(self, layout: OutputLayout) -> None:
        self.layout = layout
        self.rows_done = 0
        self.resumed_rows = 0
        self.scores = array("d")
        self._writer: Any = None

    def _start(self) -> None:
        if self._writer is not None:
            return
        sys.stdout.flush()
        self._writer = self.layout.table_format.stdout_writer(sys.stdout.buffer)
        header = self.layout.header()
        if header:
            self._writer.write(header)

    def commit(self, payload: Any, scores: Sequence[Any]) -> None:
        self._start()
        self._writer.write(payload)
        self.rows_done += len(scores)
        self.scores.extend(self.layout.flat(scores))

    def finish(self) -> None:
        self._start()
        self._writer.close(self.layout.empty())

    def keep_for_resume(self) -> None:
        """Nothing is kept: stdout cannot be continued."""

    def discard(self) -> None:
        """Nothing to remove."""
