"""Reading and writing the tables the command line scores: CSV, TSV and JSONL, files or stdin/stdout.

A table is read whole into memory (rows of answers are small next to a model) and every row keeps the
number of the line it starts on, so an error can point at it. Nothing is dropped or reordered: blank
lines are the only thing skipped, and a row that cannot be read is an error naming its line.

Formats are chosen by the file extension (``.csv``; ``.tsv`` / ``.tab``; ``.jsonl`` / ``.ndjson``) or
given explicitly; stdin (``-``) is sniffed: a first non-blank character ``{`` means JSONL, a tab in
the header line means TSV, anything else CSV. Text is UTF-8 (a byte-order mark is accepted).
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simkernel.cli.errors import DataError, UsageError

STDIO = "-"
FORMATS = ("csv", "tsv", "jsonl")
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_DELIMITERS = {"csv": ",", "tsv": "\t"}


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
    """The format of ``path`` (``"csv"``, ``"tsv"`` or ``"jsonl"``): ``explicit`` if given, else by extension.

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
            f"cannot tell the format of {path!r} from its extension {suffix or '(none)'!r}; use one of {known}, or say it with --input-format/--output-format csv|tsv|jsonl"
        )
    return _EXTENSIONS[suffix]


def read_table(path: str, fmt: str | None = None) -> Table:
    """Read ``path`` (or stdin for ``-``) as a :class:`Table`; ``fmt`` overrides the extension.

    Raises :class:`DataError` naming the line for anything unreadable (bad UTF-8, a malformed CSV
    record, a row with more or fewer fields than the header, a line that is not a JSON object).
    """
    fmt = format_of(path, fmt)
    source = "<stdin>" if path == STDIO else path
    data = _read_bytes(path)
    text = _decode(data, source)
    if fmt is None:
        fmt = _sniff(text)
    if fmt == "jsonl":
        return _parse_jsonl(text, source)
    return _parse_delimited(text, fmt, source)


def _read_bytes(path: str) -> bytes:
    if path == STDIO:
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(f"input file {path!r} does not exist; check the path (use - to read stdin)") from None
    except IsADirectoryError:
        raise DataError(f"input {path!r} is a directory; give a CSV, TSV or JSONL file") from None
    except OSError as exc:
        raise DataError(f"cannot read input file {path!r}: {exc.strerror or exc}") from None


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(
            f"{source} line {line}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        ) from None


def _sniff(text: str) -> str:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return "jsonl"
    header = stripped.split("\n", 1)[0]
    return "tsv" if "\t" in header else "csv"


def _parse_delimited(text: str, fmt: str, source: str) -> Table:
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_DELIMITERS[fmt], strict=True)
    name = fmt.upper()
    header: list[str] | None = None
    rows: list[dict[str, Any]] = []
    line_numbers: list[int] = []
    while True:
        start = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise DataError(
                f"{source} line {start}: not readable as {name} ({exc}); check its quoting"
            ) from None
        if not record:
            continue  # a blank line is not a row
        if header is None:
            header = _check_header(record, source, name)
            continue
        if len(record) != len(header):
            raise DataError(
                f"{source} line {start}: {len(record)} fields where the header has {len(header)} ({', '.join(header)}); quote fields that contain the delimiter or a line break"
            )
        rows.append(dict(zip(header, record, strict=True)))
        line_numbers.append(start)
    if header is None:
        raise DataError(f"{source} is empty; it needs a header line naming the columns")
    return Table(header, rows, line_numbers, fmt, source)


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


def _parse_jsonl(text: str, source: str) -> Table:
    columns: dict[str, None] = {}
    rows: list[dict[str, Any]] = []
    line_numbers: list[int] = []
    # records end at LF only (CRLF too): str.splitlines() would also split at U+2028, U+0085 and other
    # characters that JSON strings may hold unescaped (json.dumps(ensure_ascii=False) writes them so)
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
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
        columns.update(dict.fromkeys(row))
        rows.append(row)
        line_numbers.append(number)
    return Table(list(columns), rows, line_numbers, "jsonl", source)


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value holds a string (value or key) with an unpaired surrogate."""
    if isinstance(value, str):
        return not value.isascii() and any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    return False


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
    text = _render_jsonl(rows) if fmt == "jsonl" else _render_delimited(rows, columns, _DELIMITERS[fmt])
    if path == STDIO:
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.buffer.flush()
        return
    _write_atomically(Path(path), text)


def _render_delimited(rows: Iterable[dict[str, Any]], columns: Sequence[str], delimiter: str) -> str:
    records = [list(columns)] + [[_cell(row.get(column)) for column in columns] for row in rows]
    return "".join(_record(fields, delimiter) + "\n" for fields in records)


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
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _render_jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_atomically(path: Path, text: str) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise DataError(
            f"cannot write output {str(path)!r}: {exc.strerror or exc}; check the folder exists"
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise DataError(f"cannot write output {str(path)!r}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
