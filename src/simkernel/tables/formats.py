"""The file formats the batch engine reads and writes, by name: a format is one module holding a
:class:`~simkernel.tables.table_format.TableFormat` (its reader, writer, resumable output and column
checks), and one line of :data:`TABLE_FORMATS` here.

Formats are chosen by the file extension (``.csv``; ``.tsv`` / ``.tab``; ``.jsonl`` / ``.ndjson``;
``.parquet`` / ``.pq``) or given explicitly; stdin (``-``) is sniffed: Parquet's magic bytes ``PAR1``, a
first non-blank character ``{`` means JSONL, a tab in the header line means TSV, anything else CSV.

``simkernel score`` streams its input and output chunk by chunk (:mod:`simkernel.tables.readers`,
:mod:`simkernel.tables.writers`); :mod:`simkernel.tables.whole` reads or writes a whole table at once
through the same code, for callers whose tables are small.
"""

from __future__ import annotations

from pathlib import Path

from simkernel.errors import UsageError
from simkernel.tables.delimited import CSV, TSV
from simkernel.tables.jsonl import JSONL
from simkernel.tables.parquet import PARQUET
from simkernel.tables.table_format import STDIO, Table, TableFormat, human_size, umask, write_atomically

__all__ = [
    "FORMATS",
    "STDIO",
    "TABLE_FORMATS",
    "Table",
    "TableFormat",
    "format_list",
    "format_of",
    "human_size",
    "require_format_support",
    "rows_at_most",
    "sniff",
    "table_format",
    "umask",
    "write_atomically",
]

# name -> format, in the order the command line lists them
TABLE_FORMATS: dict[str, TableFormat] = {f.name: f for f in (CSV, TSV, JSONL, PARQUET)}
FORMATS = tuple(TABLE_FORMATS)
# the order stdin is sniffed in; the last one takes whatever the others do not
SNIFF_ORDER: tuple[TableFormat, ...] = (PARQUET, JSONL, TSV, CSV)
_EXTENSIONS = {extension: f.name for f in TABLE_FORMATS.values() for extension in f.extensions}


def format_list() -> str:
    """Every format the batch engine reads and writes, as help texts name them: "CSV, TSV, JSONL or
    Parquet" (from :data:`TABLE_FORMATS`, so a format added there appears in every ``--help``)."""
    titles = [f.title or f.name.upper() for f in TABLE_FORMATS.values()]
    return titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} or {titles[-1]}"


def table_format(fmt: str) -> TableFormat:
    """The :class:`TableFormat` named ``fmt`` (one of :data:`FORMATS`)."""
    return TABLE_FORMATS[fmt]


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


def sniff(path: str) -> str:
    """The format of the file ``path`` (a copy of stdin) from its first bytes."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 16)
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    for candidate in SNIFF_ORDER[:-1]:
        if candidate.sniffs(head, text):
            return candidate.name
    return SNIFF_ORDER[-1].name


def require_format_support(fmt: str | None) -> None:
    """Raise :class:`~simkernel.errors.MissingDependencyError` naming the install command when ``fmt``
    needs an optional extra that is missing (Parquet: pyarrow); nothing for the others."""
    if fmt is not None:
        TABLE_FORMATS[fmt].require_support()


def rows_at_most(path: str, fmt: str) -> int:
    """An upper bound of the rows of a delimited text file (its lines, counted by their ends, less the
    header's: a row takes one line or more) or of a JSONL file (its lines), the exact count of a Parquet
    file (its metadata); read fast."""
    return TABLE_FORMATS[fmt].rows_at_most(path)
