"""Whole-table helpers: read or write a whole table at once, through the same streaming readers and
writers that ``simkernel score`` uses chunk by chunk, for callers whose tables are small (``calibrate``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simkernel.tables.formats import STDIO, Table, format_of, write_atomically
from simkernel.tables.readers import open_table
from simkernel.tables.writers import render_rows


def read_table(path: str, fmt: str | None = None) -> Table:
    """Read the whole of ``path`` (or stdin for ``-``) as a :class:`Table`; ``fmt`` overrides the extension.

    Raises :class:`DataError` naming the line for anything unreadable (bad UTF-8, a malformed CSV
    record, a row with more or fewer fields than the header, a line that is not a JSON object).
    """
    with open_table(path, fmt) as reader:
        rows: list[dict[str, Any]] = []
        lines: list[int] = []
        columns: dict[str, None] = dict.fromkeys(reader.columns)
        for chunk in reader.chunks(65536):
            rows.extend(chunk.rows)
            lines.extend(chunk.lines)
            if reader.table_format.keyed_rows:  # the columns are every row's keys
                for row in chunk.rows:
                    columns.update(dict.fromkeys(row))
        return Table(list(columns), rows, lines, reader.format, reader.source)


def write_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], path: str, fmt: str | None = None
) -> None:
    """Write ``rows`` to ``path`` (stdout for ``-``) as CSV, TSV or JSONL, in the given order.

    CSV/TSV get a header of ``columns`` and one record per row (a value a row lacks is written empty;
    floats in shortest round-trip form, booleans as ``true``/``false``, lists and objects as JSON).
    JSONL writes each row's own keys in order. A file is written to a temporary name and renamed, so
    an interrupted run never leaves half a file (and OUT may be the input file itself).
    """
    fmt = format_of(path, fmt) or "csv"
    data = render_rows(rows, columns, fmt, header=True)
    if path == STDIO:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    write_atomically(Path(path), data)
