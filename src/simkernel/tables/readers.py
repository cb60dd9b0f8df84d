"""Reading a table chunk by chunk: CSV, TSV, JSONL and Parquet files, or stdin; memory bounded by a chunk.

:func:`open_table` checks the file and its header and returns a :class:`TableReader`, whose
:meth:`~TableReader.chunks` reads the rows again from the start each time it is called (``simkernel
score`` reads its input twice: once to check every row before the model loads, once to score it).
Every row keeps the number of the line it starts on (the row number in Parquet), so an error can point
at it. Nothing is dropped or reordered: blank lines are the only thing skipped, and a row that cannot be
read is an error naming its line.

Chunks hold exactly ``chunk_rows`` rows (the last one fewer), whatever the format, so the same input cut
with the same ``chunk_rows`` always gives the same chunks. stdin is first copied to a temporary file
(removed by :meth:`TableReader.close`), so it can be read twice too. Text is UTF-8 (a byte-order mark is
accepted).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from simkernel.errors import DataError
from simkernel.tables.chunk import Chunk
from simkernel.tables.formats import DELIMITERS, STDIO, format_of


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

    def chunks(self, chunk_rows: int, skip_rows: int = 0) -> Iterator[Chunk]:
        """The rows in chunks of ``chunk_rows``, the first ``skip_rows`` rows (whole chunks) left out."""
        if self.format == "parquet":
            from simkernel.tables.parquet import parquet_chunks

            return parquet_chunks(self.path, chunk_rows, skip_rows)
        rows = _jsonl_rows(self) if self.format == "jsonl" else _delimited_rows(self)
        return _in_chunks(rows, chunk_rows, skip_rows)

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
        _check_readable(path)
    try:
        if fmt is None:
            fmt = _sniff(real)
        if fmt == "parquet":
            from simkernel.tables.parquet import parquet_columns

            reader = TableReader(real, fmt, source, parquet_columns(real, source), unit="row")
        else:
            reader = TableReader(real, fmt, source, [])
            reader.columns = _first_columns(reader)
    except BaseException:
        if spooled is not None:
            shutil.rmtree(os.path.dirname(spooled), ignore_errors=True)
        raise
    reader._spooled = spooled
    return reader


def _check_readable(path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise DataError(f"input file {path!r} does not exist; check the path (use - to read stdin)") from None
    except IsADirectoryError:
        raise DataError(f"input {path!r} is a directory; give a CSV, TSV, JSONL or Parquet file") from None
    except OSError as exc:
        raise DataError(f"cannot read input file {path!r}: {exc.strerror or exc}") from None


def _spool_stdin() -> str:
    folder = tempfile.mkdtemp(prefix="simkernel-stdin-")
    path = os.path.join(folder, "stdin")
    with open(path, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    return path


def _sniff(path: str) -> str:
    with open(path, "rb") as handle:
        head = handle.read(1 << 16)
    if head.startswith(b"PAR1"):
        return "parquet"
    stripped = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if stripped.startswith("{"):
        return "jsonl"
    header = stripped.split("\n", 1)[0]
    return "tsv" if "\t" in header else "csv"


def _text_lines(reader: TableReader, newline: str = "") -> Iterator[str]:
    """The file's lines, decoded, each with its line end: for CSV/TSV (``newline=""``) a line ends at \\n,
    \\r\\n or \\r, as the csv module needs; for JSONL (``newline="\\n"``) at \\n only, since a JSON string may
    hold U+2028, U+0085 and other line separators unescaped. Invalid UTF-8 is an error naming its line and
    byte."""
    with open(reader.path, "rb") as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline=newline)
        try:
            yield from text
        except UnicodeDecodeError:
            raise _utf8_error(reader.path, reader.source) from None


def _utf8_error(path: str, source: str) -> DataError:
    """The error for the first invalid UTF-8 byte of ``path``, naming its line (found by a second read)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line, offset = 1, 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 16):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                # exc.object may start with up to 3 held-back bytes of the block before (never a newline)
                bad = exc.object[exc.start]
                start = max(0, exc.start - (len(exc.object) - len(block)))
                line += block.count(b"\n", 0, start)
                return DataError(
                    f"{source} line {line}: not valid UTF-8 (byte 0x{bad:02x}); save the file as UTF-8"
                )
            line += block.count(b"\n")
            offset += len(block)
    return DataError(f"{source}: not valid UTF-8 at its end (byte {offset}); save the file as UTF-8")


def _first_columns(reader: TableReader) -> list[str]:
    if reader.format == "jsonl":
        for _, row in _jsonl_rows(reader):
            return list(row)
        return []
    for _ in _delimited_rows(reader, header_only=True):  # reads the header into reader.columns
        pass  # pragma: no cover - header_only yields no row
    return reader.columns


def _delimited_rows(reader: TableReader, header_only: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) of a CSV/TSV file; the header (checked) is stored in ``reader.columns``."""
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    name = reader.format.upper()
    records = csv.reader(_text_lines(reader), delimiter=DELIMITERS[reader.format], strict=True)
    header: list[str] | None = None
    while True:
        start = records.line_num + 1
        try:
            record = next(records)
        except StopIteration:
            break
        except csv.Error as exc:
            raise DataError(
                f"{reader.source} line {start}: not readable as {name} ({exc}); check its quoting"
            ) from None
        if not record:
            continue  # a blank line is not a row
        if header is None:
            header = _check_header(record, reader.source, name)
            reader.columns = header
            if header_only:
                return
            continue
        if len(record) != len(header):
            raise DataError(
                f"{reader.source} line {start}: {len(record)} fields where the header has {len(header)} ({', '.join(header)}); quote fields that contain the delimiter or a line break"
            )
        yield start, dict(zip(header, record, strict=True))
    if header is None:
        raise DataError(f"{reader.source} is empty; it needs a header line naming the columns")


def _check_header(record: list[str], source: str, name: str) -> list[str]:
    header = [field.strip() for field in record]
    if any(not field for field in header):
        raise DataError(
            f"{source} line 1: the {name} header has an empty column name ({record!r}); name every column"
        )
    duplicates = sorted({field for field in header if header.count(field) > 1})
    if duplicates:
        raise DataError(
            f"{source} line 1: duplicate column names {duplicates}; give each column its own name"
        )
    return header


def _jsonl_rows(reader: TableReader) -> Iterator[tuple[int, dict[str, Any]]]:
    source = reader.source
    for number, line in enumerate(_text_lines(reader, newline="\n"), start=1):
        line = line.removesuffix("\n").removesuffix("\r")
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{source} line {number}: not valid JSON ({exc.msg} at column {exc.colno}); each line must hold one JSON object"
            ) from None
        if "\\u" in line and _has_lone_surrogate(row):
            raise DataError(
                f"{source} line {number}: a \\u escape gives a lone surrogate (U+D800-U+DFFF without its pair), which is not Unicode text; fix that escape"
            )
        if not isinstance(row, dict):
            raise DataError(
                f'{source} line {number}: a JSON {type(row).__name__} where a JSON object is expected; each line must hold one object like {{"predicted": "...", "ground_truth": "..."}}'
            )
        yield number, row


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value holds a string (value or key) with an unpaired surrogate."""
    if isinstance(value, str):
        return not value.isascii() and any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    return False


def _in_chunks(
    rows: Iterator[tuple[int, dict[str, Any]]], chunk_rows: int, skip_rows: int
) -> Iterator[Chunk]:
    index = 0
    batch: list[dict[str, Any]] = []
    lines: list[int] = []
    for line, row in rows:
        if index < skip_rows:
            index += 1
            continue
        batch.append(row)
        lines.append(line)
        if len(batch) == chunk_rows:
            yield Chunk(batch, lines, index)
            index += len(batch)
            batch, lines = [], []
    if batch:
        yield Chunk(batch, lines, index)
