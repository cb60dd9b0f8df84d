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
FORMATS = ("csv", "tsv", "jsonl", "parquet")
LIST_CELL_FORMATS = ("jsonl", "parquet")  # a cell may hold a list (several ground truths, the references)
JSON_CELL_FORMATS = ("jsonl",)  # cells are JSON values and the columns are the rows' keys
_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def position_unit(fmt: str) -> str:
    """What a position in a file of format ``fmt`` counts: ``"row"`` in Parquet files, else ``"line"``."""
    return "row" if fmt == "parquet" else "line"


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
    if fmt == "parquet":
        from simkernel.tables.parquet import pyarrow

        pyarrow()
