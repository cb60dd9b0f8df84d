"""What the text formats (CSV, TSV, JSONL) share: reading lines of UTF-8, cutting rows into chunks,
counting lines fast, and their resumable output, one file of bytes (``output.part``) truncated on resume
to what state.json names."""

from __future__ import annotations

import base64
import codecs
import datetime
import decimal
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simkernel.errors import DataError
from simkernel.tables.chunk import Chunk
from simkernel.tables.table_format import OutputParts, TableFormat


class TextFormat(TableFormat):
    """A format of UTF-8 text, one row a line or more (the rows come from :meth:`rows`)."""

    def rows(self, reader: Any) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line, row) of each row of ``reader``'s file."""
        raise NotImplementedError

    def entries(self, reader: Any) -> Iterator[tuple[int, dict[str, Any], str | None]]:
        """(line, row, the row's text where the format keeps it, else None) of each row of the file."""
        for line, row in self.rows(reader):
            yield line, row, None

    def chunks(self, reader: Any, chunk_rows: int, skip_rows: int) -> Iterator[Chunk]:
        return in_chunks(self.entries(reader), chunk_rows, skip_rows)

    def rows_at_most(self, path: str) -> int:
        """Its lines, counted by their ends (less the header's where it has one): a row takes one line
        or more."""
        newlines = returns = 0
        last = b""
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                newlines += block.count(b"\n")
                returns += block.count(b"\r")
                last = block[-1:]
        lines = max(newlines, returns) + (0 if last in (b"\n", b"\r") else 1)
        return max(0, lines - (0 if self.keyed_rows else 1))

    def parts(self, folder: Path) -> OutputParts:
        return TextParts(folder)


class TextParts(OutputParts):
    """``output.part``: the header and the rows committed so far."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "output.part"
        self.handle: Any = None
        self.committed = 0

    def start(self, header: bytes) -> None:
        self.handle = open(self.path, "w+b")  # noqa: SIM115 - held for the whole run
        self.handle.write(header)

    def resume(self, state: dict[str, Any]) -> None:
        self.committed = int(state["bytes"])
        self.handle = open(self.path, "r+b")  # noqa: SIM115
        self.handle.truncate(self.committed)
        self.handle.seek(0, os.SEEK_END)

    def commit(self, payload: Any, index: int) -> None:
        self.handle.write(payload)

    def sync(self) -> None:
        if self.handle is not None:
            self.handle.flush()
            os.fsync(self.handle.fileno())

    def state(self) -> dict[str, Any]:
        size = self.handle.tell() if self.handle is not None else 0
        self.committed = size
        return {"bytes": size}

    def written_bytes(self) -> int:
        return self.committed

    def finish(self, empty: Any) -> Path:
        self.sync()
        self.handle.close()
        self.handle = None
        return self.path

    def close(self) -> None:
        if self.handle is not None:
            try:
                self.handle.close()
            except OSError:
                pass
            self.handle = None


def text_lines(reader: Any, newline: str = "") -> Iterator[str]:
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


def in_chunks(
    entries: Iterator[tuple[int, dict[str, Any], str | None]], chunk_rows: int, skip_rows: int
) -> Iterator[Chunk]:
    """(line, row, text) entries cut into :class:`Chunk` s of ``chunk_rows``, the first ``skip_rows`` left
    out; a chunk keeps the rows' texts where every one has its text (JSONL)."""
    index = 0
    batch: list[dict[str, Any]] = []
    lines: list[int] = []
    texts: list[str | None] = []
    for line, row, text in entries:
        if index < skip_rows:
            index += 1
            continue
        batch.append(row)
        lines.append(line)
        texts.append(text)
        if len(batch) == chunk_rows:
            yield _chunk(batch, lines, index, texts)
            index += len(batch)
            batch, lines, texts = [], [], []
    if batch:
        yield _chunk(batch, lines, index, texts)


def _chunk(rows: list[dict[str, Any]], lines: list[int], first: int, texts: list[str | None]) -> Chunk:
    kept = [text for text in texts if text is not None]
    return Chunk(rows, lines, first, texts=kept if len(kept) == len(rows) else None)


class JsonNumber(float):
    """A JSON number with a fraction or an exponent, read from a JSONL file: its value, and its text as
    the file spells it (``7.10``, ``1e5``), which is what a text column scores and what CSV and TSV output
    write (``repr`` gives the text). JSON output written from the row writes the value."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> JsonNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __repr__(self) -> str:
        return self.text

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (JsonNumber, (self.text,))


def number_text(value: int | float | decimal.Decimal) -> str:
    """A number as text, as the input held it: a JSON number as its file spells it, a float in its
    shortest round-trip form (Parquet's float32 in float32's: see :func:`~simkernel.tables.parquet.arrow_rows`),
    an integer or a decimal in full."""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def json_value(value: Any) -> Any:
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
