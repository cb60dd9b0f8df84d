"""Reading a table chunk by chunk: CSV, TSV, JSONL and Parquet files, or stdin; memory bounded by a chunk.

:func:`open_table` checks the file and its header and returns a :class:`TableReader`, whose
:meth:`~TableReader.chunks` reads the rows again from the start each time it is called (``simkernel
score`` reads its input twice: once to check every row before the model loads, once to score it).
Every row keeps the number of the line it starts on (the row number in Parquet), so an error can point
at it. Nothing is dropped or reordered: blank lines are the only thing skipped, and a row that cannot be
read is an error naming its line. The rows come from the format's module
(:mod:`~simkernel.tables.delimited`, :mod:`~simkernel.tables.jsonl`, :mod:`~simkernel.tables.parquet`).

Chunks hold exactly ``chunk_rows`` rows (the last one fewer), whatever the format, so the same input cut
with the same ``chunk_rows`` always gives the same chunks. stdin is first copied to a temporary file
(removed by :meth:`TableReader.close`), so it can be read twice too. Text is UTF-8 (a byte-order mark is
accepted).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from simkernel.tables.chunk import Chunk
from simkernel.tables.formats import STDIO, TableFormat, format_of, sniff, table_format
from simkernel.tables.table_format import check_readable


@dataclass
class TableReader:
    """An opened input: ``columns`` in file order (for JSONL, the keys of the first row; the full list
    comes from reading every row), ``unit`` is ``"line"`` or ``"row"`` (Parquet)."""

    path: str
    format: str
    source: str
    columns: list[str]
    unit: str = "line"
    _spooled: str | None = field(default=None, repr=False)

    @property
    def table_format(self) -> TableFormat:
        """Its :class:`~simkernel.tables.table_format.TableFormat`."""
        return table_format(self.format)

    def chunks(self, chunk_rows: int, skip_rows: int = 0) -> Iterator[Chunk]:
        """The rows in chunks of ``chunk_rows``, the first ``skip_rows`` rows (whole chunks) left out."""
        return self.table_format.chunks(self, chunk_rows, skip_rows)

    def close(self) -> None:
        """Remove the copy of stdin, if any."""
        if self._spooled is not None:
            shutil.rmtree(os.path.dirname(self._spooled), ignore_errors=True)
            self._spooled = None

    def __enter__(self) -> TableReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_table(path: str, fmt: str | None = None) -> TableReader:
    """Open ``path`` (``-``: stdin, copied to a temporary file and sniffed unless ``fmt`` says) for reading.

    Raises :class:`DataError` for a missing or unreadable file and a bad header, naming the line.
    """
    fmt = format_of(path, fmt)
    spooled = None
    if path == STDIO:
        spooled = _spool_stdin()
        source, real = "<stdin>", spooled
    else:
        source, real = path, path
        check_readable(path)
    try:
        if fmt is None:
            fmt = sniff(real)
        kind = table_format(fmt)
        reader = TableReader(real, fmt, source, [], unit=kind.unit)
        reader.columns = kind.columns(reader)
    except BaseException:
        if spooled is not None:
            shutil.rmtree(os.path.dirname(spooled), ignore_errors=True)
        raise
    reader._spooled = spooled
    return reader


def _spool_stdin() -> str:
    folder = tempfile.mkdtemp(prefix="simkernel-stdin-")
    path = os.path.join(folder, "stdin")
    with open(path, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    return path
