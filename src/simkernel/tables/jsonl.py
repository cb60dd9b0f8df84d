"""JSON Lines: one JSON object a line; the columns are the rows' keys (in the order first seen), a cell
holds any JSON value (a list stays a list). A key twice in one object is an error naming its line (the
JSON parser would keep the last value silently). A number with a fraction or an exponent keeps its text
(:class:`~simkernel.tables.text.JsonNumber`).

Written from JSONL input: each input line as it is (its spacing, escapes and number spellings), the
added keys appended before its closing brace; from other input: each row's own keys in order, then the
added ones, UTF-8 unescaped."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from simkernel.errors import DataError
from simkernel.tables.chunk import Chunk
from simkernel.tables.table_format import duplicate_names
from simkernel.tables.text import JsonNumber, TextFormat, json_value, text_lines


class JsonLines(TextFormat):
    name = "jsonl"
    extensions = (".jsonl", ".ndjson")
    keyed_rows = True
    lists_in_cells = True

    def sniffs(self, head: bytes, text: str) -> bool:
        return text.startswith("{")

    def columns(self, reader: Any) -> list[str]:
        for _, row in self.rows(reader):
            return list(row)
        return []

    def rows(self, reader: Any) -> Iterator[tuple[int, dict[str, Any]]]:
        for number, row, _ in self.entries(reader):
            yield number, row

    def entries(self, reader: Any) -> Iterator[tuple[int, dict[str, Any], str | None]]:
        source = reader.source
        objects = _Objects()
        decoder = json.JSONDecoder(object_pairs_hook=objects, parse_float=JsonNumber)
        for number, line in enumerate(text_lines(reader, newline="\n"), start=1):
            line = line.removesuffix("\n").removesuffix("\r")
            if not line.strip():
                continue
            objects.start()
            try:
                row = decoder.decode(line)
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
            if objects.duplicates and objects.duplicates_at == objects.count:
                raise DataError(
                    f"{source} line {number}: duplicate column names {objects.duplicates}; give each column its own name"
                )
            if objects.duplicates:
                raise DataError(
                    f"{source} line {number}: a JSON object in a cell has the keys {objects.duplicates} more than once; give each key its own name"
                )
            yield number, row, line

    def render_rows(self, rows: Iterable[dict[str, Any]], columns: Sequence[str], header: bool) -> bytes:
        text = "".join(json.dumps(row, ensure_ascii=False, default=json_value) + "\n" for row in rows)
        return text.encode("utf-8")

    def render_chunk(
        self, chunk: Chunk, columns: Sequence[str], added: list[tuple[str, str, list[Any]]], schema: Any
    ) -> Any:
        """Rows read from JSONL are written as their lines, each with the ``added`` keys appended."""
        if chunk.texts is None:
            return super().render_chunk(chunk, columns, added, schema)
        out = []
        for index, (row, text) in enumerate(zip(chunk.rows, chunk.texts, strict=True)):
            body = text.strip(_JSON_SPACE)  # "{...}": it parsed as one object
            head = body[:-1].rstrip(_JSON_SPACE)
            pairs = ", ".join(
                json.dumps(name, ensure_ascii=False) + ": " + json.dumps(values[index], ensure_ascii=False)
                for name, _, values in added
            )
            out.append(f"{head}{', ' if row else ''}{pairs}}}\n" if pairs else f"{body}\n")
        return "".join(out).encode("utf-8")


_JSON_SPACE = " \t\r\n"


class _Objects:
    """The JSON decoder's ``object_pairs_hook``: each object as a dict, noting the first one that holds a
    key twice (``duplicates_at``: its place among the objects of the line; the line's own object, whose
    keys are the columns, is decoded last)."""

    def __init__(self) -> None:
        self.start()

    def start(self) -> None:
        """A new line."""
        self.count = 0
        self.duplicates: list[str] = []
        self.duplicates_at = 0

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        self.count += 1
        row = dict(pairs)
        if len(row) != len(pairs) and not self.duplicates:
            self.duplicates = duplicate_names(key for key, _ in pairs)
            self.duplicates_at = self.count
        return row


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value holds a string (value or key) with an unpaired surrogate."""
    if isinstance(value, str):
        return not value.isascii() and any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    return False


JSONL = JsonLines()
