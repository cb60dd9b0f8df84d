"""Formats of the tables the command line scores (CSV, TSV, JSONL, Parquet), and whole-table helpers.

Formats are chosen by the file extension (``.csv``; ``.tsv`` / ``.tab``; ``.jsonl`` / ``.ndjson``;
``.parquet`` / ``.pq``) or given explicitly; stdin (``-``) is sniffed: Parquet's magic bytes ``PAR1``, a
first non-blank character ``{`` means JSONL, a tab in the header line means TSV, anything else CSV.

``simkernel score`` streams its input and output chunk by chunk (:mod:`simkernel.tables.readers`,
:mod:`simkernel.tables.writers`); :func:`read_table` and :func:`write_table` read or write a whole table at
once through the same code, for callers whose tables are small.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simkernel.errors import DataError, UsageError

STDIO = "-"


@dataclass(frozen=True)
class TableFormat:
    """What the batch engine needs to know of a format, so that it never branches on a format's name.

    - ``keyed_rows``: the columns are the rows' keys (JSONL): known only once every row is read, and a
      cell holds a JSON value (a text stays a text; a list is a list);
    - ``typed``: the file carries a schema with the columns' types (Parquet), which the output keeps;
    - ``lists_in_cells``: a cell may hold a list (several ground truths, the references);
    - ``delimiter``: the field separator of a delimited text format (CSV, TSV), else None;
    - ``unit``: what a position in the file counts, ``"line"`` or ``"row"``.
    """

    name: str
    extensions: tuple[str, ...]
    keyed_rows: bool = False
    typed: bool = False
    lists_in_cells: bool = False
    delimiter: str | None = None
    unit: str = "line"


TABLE_FORMATS = {
    f.name: f
    for f in (
        TableFormat("csv", (".csv",), delimiter=","),
        TableFormat("tsv", (".tsv", ".tab"), delimiter="\t"),
        TableFormat("jsonl", (".jsonl", ".ndjson"), keyed_rows=True, lists_in_cells=True),
        TableFormat("parquet", (".parquet", ".pq"), typed=True, lists_in_cells=True, unit="row"),
    )
}
FORMATS = tuple(TABLE_FORMATS)
LIST_CELL_FORMATS = tuple(name for name, f in TABLE_FORMATS.items() if f.lists_in_cells)
JSON_CELL_FORMATS = tuple(name for name, f in TABLE_FORMATS.items() if f.keyed_rows)
DELIMITERS = {name: f.delimiter for name, f in TABLE_FORMATS.items() if f.delimiter is not None}
_EXTENSIONS = {extension: f.name for f in TABLE_FORMATS.values() for extension in f.extensions}


def table_format(fmt: str) -> TableFormat:
    """The :class:`TableFormat` named ``fmt`` (one of :data:`FORMATS`)."""
    return TABLE_FORMATS[fmt]


def position_unit(fmt: str) -> str:
    """What a position in a file of format ``fmt`` counts: ``"row"`` in Parquet files, else ``"line"``."""
    return TABLE_FORMATS[fmt].unit


@dataclass
class Table:
    """Rows of a file in input order.

    ``columns`` lists the column names in file order (for JSONL, the keys in the order first seen);
    ``rows[i]`` maps column name to value (strings for CSV/TSV, any JSON value for JSONL; a key a
    JSONL row lacks is absent); ``line_numbers[i]`` is the 1-based line on which row ``i`` starts.
    """

    columns: list[str]
    rows: list[dict[str, Any]]
    line_numbers: list[int]
    format: str
    source: str

    def __len__(self) -> int:
        return len(self.rows)


def format_of(path: str, explicit: str | None = None) -> str | None:
    """The format of ``path`` (``"csv"``, ``"tsv"``, ``"jsonl"`` or ``"parquet"``): ``explicit`` if given,
    else by extension.

    Returns None for stdin/stdout (``-``) without an explicit format; raises :class:`UsageError` for an
    extension it does not know.
    """
    if explicit is not None:
        return explicit
    if path == STDIO:
        return None
    suffix = Path(path).suffix.lower()
    if suffix not in _EXTENSIONS:
        known = ", ".join(sorted(_EXTENSIONS))
        raise UsageError(
            f"cannot tell the format of {path!r} from its extension {suffix or '(none)'!r}; use one of {known}, or say it with --input-format/--output-format csv|tsv|jsonl|parquet"
        )
    return _EXTENSIONS[suffix]


def umask() -> int:
    """The process's file-creation mask."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it onto ``path``."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise DataError(
            f"cannot write output {str(path)!r}: {exc.strerror or exc}; check the folder exists"
        ) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise DataError(f"cannot write output {str(path)!r}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def human_size(n: float) -> str:
    """``n`` bytes for people: "512 B", "3.4 KB", "1.2 GB" (powers of 1024)."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


def require_format_support(fmt: str | None) -> None:
    """Raise :class:`~simkernel.errors.MissingDependencyError` naming the install command when ``fmt``
    needs an optional extra that is missing (Parquet: pyarrow); nothing for the others."""
    if fmt is not None and TABLE_FORMATS[fmt].typed:
        from simkernel.tables.parquet import pyarrow

        pyarrow()


def rows_at_most(path: str, fmt: str) -> int:
    """An upper bound of the rows of a delimited text file (its lines, counted by their ends, less the
    header's: a row takes one line or more) or of a JSONL file (its lines), the exact count of a Parquet
    file (its metadata); read fast."""
    spec = TABLE_FORMATS[fmt]
    if spec.typed:
        from simkernel.tables.parquet import parquet_rows

        return parquet_rows(path, path)
    newlines = returns = 0
    last = b""
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            newlines += block.count(b"\n")
            returns += block.count(b"\r")
            last = block[-1:]
    lines = max(newlines, returns) + (0 if last in (b"\n", b"\r") else 1)
    return max(0, lines - (0 if spec.keyed_rows else 1))
