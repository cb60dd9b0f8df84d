"""CSV and TSV: delimited text, one format class with the delimiter as its trait.

Reading: a header line naming the columns (stripped, checked: none empty, none twice), then one record
per row (quoted fields may hold the delimiter and line breaks; a blank line is not a row); every cell is
a string. Writing: a header of the columns and one record per row (a value a row lacks is written empty;
floats in shortest round-trip form, booleans as ``true``/``false``, lists and objects as JSON). Ray Data
reads such files on the nodes with Arrow's CSV reader, every column as text.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from simkernel.errors import DataError
from simkernel.tables.table_format import duplicate_names
from simkernel.tables.text import TextFormat, json_value, number_text, text_lines

# what separates the fields of a delimited file, as messages name them
SEPARATORS = {",": "commas", "\t": "tabs", ";": "semicolons", "|": "vertical bars"}


class DelimitedText(TextFormat):
    """A delimited text format: ``delimiter`` separates the fields."""

    def __init__(self, name: str, extensions: tuple[str, ...], delimiter: str) -> None:
        self.name = name
        self.extensions = extensions
        self.delimiter = delimiter
        self.read_on_nodes = True

    def sniffs(self, head: bytes, text: str) -> bool:
        return self.delimiter in text.split("\n", 1)[0]

    def columns(self, reader: Any) -> list[str]:
        for _ in self._records(reader, header_only=True):  # reads the header into reader.columns
            pass  # pragma: no cover - header_only yields no row
        return reader.columns

    def rows(self, reader: Any) -> Iterator[tuple[int, dict[str, Any]]]:
        return self._records(reader)

    def header_hint(self, columns: Sequence[str]) -> str | None:
        """A header read as one column that holds another separator: the file's delimiter is another one
        (Excel in many locales saves CSV with semicolons)."""
        if len(columns) != 1:
            return None
        counts = {sep: columns[0].count(sep) for sep in SEPARATORS if sep != self.delimiter}
        found = max(counts, key=lambda sep: counts[sep])
        if not counts[found]:
            return None
        other = next((f for f in DELIMITED if f.delimiter == found), None)
        seen, expected = SEPARATORS[found], SEPARATORS[self.delimiter]
        if other is not None:
            return f"its header {columns[0]!r} is one column: the file seems separated by {seen}, not {expected}; read it with --input-format {other.name} (or give it the extension {other.extensions[0]})"
        return f"its header {columns[0]!r} is one column: the file seems separated by {seen}, not {expected}; save it with {expected} between the fields (a spreadsheet's CSV export may need its field separator set to {self.delimiter!r})"

    def _records(self, reader: Any, header_only: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line, row) of the file; the header (checked) is stored in ``reader.columns``."""
        csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
        name = self.name.upper()
        records = csv.reader(text_lines(reader), delimiter=self.delimiter, strict=True)
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

    def header(self, columns: Sequence[str]) -> bytes:
        return self.render_rows([], columns, header=True)

    def render_rows(self, rows: Iterable[dict[str, Any]], columns: Sequence[str], header: bool) -> bytes:
        records = [list(columns)] if header else []
        records += [[_cell(row.get(column)) for column in columns] for row in rows]
        return "".join(_record(fields, self.delimiter) + "\n" for fields in records).encode("utf-8")

    def ray_dataset(self, ray: Any, files: list[str], columns: list[str]) -> Any:
        return ray.data.read_csv(
            files, include_paths=True, partitioning=None, num_cpus=0, **self._arrow_options(columns)
        )

    def exact_rows(self, path: str, columns: list[str]) -> int:
        from pyarrow import csv as arrow_csv

        return int(arrow_csv.read_csv(path, **self._arrow_options(columns)).num_rows)

    def _arrow_options(self, columns: list[str]) -> dict[str, Any]:
        """Arrow's CSV reader as the nodes read such a file: every column as text (no type inference),
        quoted line breaks allowed, the header's names taken from the first line (stripped, as here)."""
        import pyarrow as pa
        from pyarrow import csv as arrow_csv

        return {
            "read_options": arrow_csv.ReadOptions(column_names=columns, skip_rows=1),
            "parse_options": arrow_csv.ParseOptions(delimiter=self.delimiter, newlines_in_values=True),
            "convert_options": arrow_csv.ConvertOptions(
                column_types={name: pa.string() for name in columns},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        }


def _check_header(record: list[str], source: str, name: str) -> list[str]:
    header = [field.strip() for field in record]
    if any(not field for field in header):
        raise DataError(
            f"{source} line 1: the {name} header has an empty column name ({record!r}); name every column"
        )
    duplicates = duplicate_names(header)
    if duplicates:
        raise DataError(
            f"{source} line 1: duplicate column names {duplicates}; give each column its own name"
        )
    return header


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
    """A cell's text: numbers as the input held them (:func:`~simkernel.tables.text.number_text`),
    booleans as ``true``/``false``, lists and objects as JSON, and what JSON has no type for as JSONL
    output writes it (dates and times in ISO 8601, bytes in base64, decimals in full)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return number_text(value)
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, ensure_ascii=False, default=json_value)
    try:
        return str(json_value(value))
    except TypeError:
        return str(value)


CSV = DelimitedText("csv", (".csv",), ",")
TSV = DelimitedText("tsv", (".tsv", ".tab"), "\t")
DELIMITED = (CSV, TSV)
