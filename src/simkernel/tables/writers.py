"""The output of ``simkernel score``, chunk by chunk: every input row with the scores (and success) added.

:class:`OutputLayout` turns a scored chunk into what is written: bytes for CSV, TSV and JSONL, a pyarrow
Table for Parquet. CSV/TSV get a header of the columns and one record per row (a value a row lacks is
written empty; floats in shortest round-trip form, booleans as ``true``/``false``, lists and objects as
JSON); JSONL writes each row's own keys in order, then the added ones. :class:`StdoutOutput` writes the
chunks to stdout as they come; a file goes through :class:`simkernel.tables.partial.PartialOutput`.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from simkernel.errors import DataError
from simkernel.tables.formats import DELIMITERS

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
    """CSV/TSV (with a header line when ``header``) or JSONL bytes of ``rows``, UTF-8."""
    if fmt == "jsonl":
        text = "".join(json.dumps(row, ensure_ascii=False, default=_json_value) + "\n" for row in rows)
        return text.encode("utf-8")
    delimiter = DELIMITERS[fmt]
    records = [list(columns)] if header else []
    records += [[_cell(row.get(column)) for column in columns] for row in rows]
    return "".join(_record(fields, delimiter) + "\n" for fields in records).encode("utf-8")


def _record(fields: Sequence[str], delimiter: str) -> str:
    """One CSV/TSV record: a field holding the delimiter, a quote, CR or LF is quoted (its quotes doubled),
    as csv.writer does, except that csv.writer (Python 3.11) leaves a lone CR bare under a LF line
    terminator, and a reader then splits the row there."""
    if len(fields) == 1 and not fields[0]:
        return '""'  # not a blank line, which readers skip
    special = (delimiter, '"', "\r", "\n")
    return delimiter.join(
        '"' + field.replace('"', '""') + '"' if any(c in field for c in special) else field
        for field in fields
    )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, ensure_ascii=False, default=_json_value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


def _json_value(value: Any) -> Any:
    """A value JSON has no type for (from Parquet): dates and times in ISO 8601, decimals and others as
    text, bytes in base64."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (decimal.Decimal, datetime.timedelta)):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


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
        if self.format in DELIMITERS:
            return render_rows([], self.columns, self.format, header=True)
        return b""

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

    def render(self, chunk: Any, scores: Sequence[Any]) -> Any:
        """The output of one chunk: bytes (CSV, TSV, JSONL, no header) or a pyarrow Table (Parquet)."""
        successes = self.successes(scores)
        if self.format == "parquet":
            from simkernel.tables.parquet import output_table

            return output_table(
                chunk, self.arrow_schema, self.score_columns, self.by_column(scores), successes
            )
        names = [name for name, _ in self.score_columns]
        rows = []
        for index, (row, score) in enumerate(zip(chunk.rows, scores, strict=True)):
            out = dict(row)
            if self.width == 1:
                out[names[0]] = score
            else:
                out.update(zip(names, score, strict=True))
            if successes is not None:
                out[SUCCESS_COLUMN] = successes[index]
            rows.append(out)
        return render_rows(rows, self.columns, self.format, header=False)

    def empty(self) -> Any:
        """The Parquet table of an input without rows."""
        from simkernel.tables.parquet import empty_table

        return empty_table(self.arrow_schema, self.score_columns, self.threshold is not None)


class StdoutOutput:
    """Chunks written to stdout as they are scored (no temporary file; nothing to resume). Nothing is
    written before the first chunk is scored, so an error loading the model leaves stdout empty."""

    def __init__(self, layout: OutputLayout) -> None:
        self.layout = layout
        self.rows_done = 0
        self.resumed_rows = 0
        self.scores = array("d")
        self._started = False
        self._parquet: Any = None

    def _write(self, data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        sys.stdout.flush()
        if self.layout.format == "parquet":
            from simkernel.tables.parquet import StreamWriter

            self._parquet = StreamWriter(sys.stdout.buffer)
        else:
            self._write(self.layout.header())

    def commit(self, payload: Any, scores: Sequence[Any]) -> None:
        self._start()
        if self._parquet is not None:
            self._parquet.write(payload)
        else:
            self._write(payload)
        self.rows_done += len(scores)
        self.scores.extend(self.layout.flat(scores))

    def finish(self) -> None:
        self._start()
        if self._parquet is not None:
            if self._parquet.writer is None:
                self._parquet.write(self.layout.empty())
            self._parquet.close()
            sys.stdout.buffer.flush()

    def keep_for_resume(self) -> None:
        """Nothing is kept: stdout cannot be continued."""

    def discard(self) -> None:
        """Nothing to remove."""
