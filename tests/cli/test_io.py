"""Reading and writing tables: formats, line numbers of rows, stdin sniffing, lossless round trips."""

from __future__ import annotations

import csv
import io
import json
import os
import sys

import pytest

from simkernel.errors import DataError, UsageError
from simkernel.tables.formats import format_of
from simkernel.tables.whole import read_table, write_table


def test_format_by_extension():
    assert format_of("a.csv") == "csv"
    assert format_of("A.TSV") == "tsv"
    assert format_of("x.tab") == "tsv"
    assert format_of("x.jsonl") == "jsonl"
    assert format_of("x.ndjson") == "jsonl"
    assert format_of("-") is None
    assert format_of("x.txt", "tsv") == "tsv"
    with pytest.raises(UsageError, match=r"'.xlsx'.*--input-format"):
        format_of("x.xlsx")


def test_csv_keeps_rows_order_and_starting_line_of_multiline_records(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text('q,a\n1,"two\nlines"\n\n3,"x, y"\n4,"say ""hi"""\n', encoding="utf-8")
    table = read_table(str(path))
    assert table.columns == ["q", "a"]
    assert [r["a"] for r in table.rows] == ["two\nlines", "x, y", 'say "hi"']
    # the multi-line record starts on line 2; the blank line 4 is skipped
    assert table.line_numbers == [2, 5, 6]
    assert table.format == "csv"


def test_crlf_bom_and_unicode(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes("\ufeffq,a\r\nКто?,Толстой\r\n中国,北京\r\n".encode())
    table = read_table(str(path))
    assert table.columns == ["q", "a"]
    assert table.rows == [{"q": "Кто?", "a": "Толстой"}, {"q": "中国", "a": "北京"}]
    assert table.line_numbers == [2, 3]


def test_tsv(tmp_path):
    path = tmp_path / "a.tsv"
    path.write_text("a\tb\nx, y\tz\n", encoding="utf-8")
    assert read_table(str(path)).rows == [{"a": "x, y", "b": "z"}]


def test_jsonl_columns_in_first_seen_order_and_values_kept(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"b": 1, "a": [1, "x"]}\n\n{"c": null, "a": "y"}\n', encoding="utf-8")
    table = read_table(str(path))
    assert table.columns == ["b", "a", "c"]
    assert table.rows == [{"b": 1, "a": [1, "x"]}, {"c": None, "a": "y"}]
    assert table.line_numbers == [1, 3]


@pytest.mark.parametrize(
    ("text", "fmt"),
    [('{"a": 1}\n', "jsonl"), ('  \n{"a": 1}\n', "jsonl"), ("a\tb\n1\t2\n", "tsv"), ("a,b\n1,2\n", "csv")],
)
def test_stdin_is_sniffed(monkeypatch, text, fmt):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert read_table("-").format == fmt


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (b"a,b\n1,2\n3,4,5\n", r"line 3: 3 fields where the header has 2 \(a, b\)"),
        (b"a,b\n1,2\n3\n", r"line 3: 1 fields where the header has 2"),
        (b"a,b\n1,2\n\xff,3\n", r"line 3: not valid UTF-8 \(byte 0xff\)"),
        (b'a,b\n1,2\n"3,4\n', r"line 3: not readable as CSV"),
        (b"a,a\n1,2\n", r"line 1: duplicate column names \['a'\]"),
        (b"a,,c\n1,2,3\n", r"line 1: .*empty column name"),
        (b"", r"is empty; it needs a header line"),
    ],
)
def test_unreadable_csv_names_the_line(tmp_path, content, pattern):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(DataError, match=pattern):
        read_table(str(path))


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ('{"a": 1}\n{"a": 2,}\n', r"line 2: not valid JSON"),
        ('{"a": 1}\n\n[1, 2]\n', r"line 3: a JSON list where a JSON object is expected"),
    ],
)
def test_unreadable_jsonl_names_the_line(tmp_path, content, pattern):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=pattern):
        read_table(str(path))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_table(str(tmp_path / "nope.csv"))
    folder = tmp_path / "d.csv"
    folder.mkdir()
    with pytest.raises(DataError, match="is a directory"):
        read_table(str(folder))


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_delimited_round_trip_is_lossless(tmp_path, fmt):
    rows = [
        {"q": "a, b", "a": 'quote "x"', "n": 0.1 + 0.2, "ok": True},
        {"q": "line\nbreak\ttab", "a": "Толстой 北京", "n": 1e-300, "ok": False},
    ]
    path = tmp_path / f"out.{fmt}"
    write_table(rows, ["q", "a", "n", "ok"], str(path))
    back = read_table(str(path)).rows
    assert [r["q"] for r in back] == [r["q"] for r in rows]
    assert [r["a"] for r in back] == [r["a"] for r in rows]
    assert [float(r["n"]) for r in back] == [r["n"] for r in rows]  # shortest round-trip floats
    assert [r["ok"] for r in back] == ["true", "false"]
    # readable by the csv module as the standard dialect
    with open(path, newline="", encoding="utf-8") as fh:
        assert len(list(csv.reader(fh, delimiter="," if fmt == "csv" else "\t"))) == 3


def test_jsonl_round_trip_keeps_types_and_key_order(tmp_path):
    rows = [{"b": [1, "x"], "a": None, "score": 0.5, "success": False}]
    path = tmp_path / "out.jsonl"
    write_table(rows, ["b", "a", "score", "success"], str(path))
    line = path.read_text(encoding="utf-8")
    assert list(json.loads(line)) == ["b", "a", "score", "success"]
    assert json.loads(line) == rows[0]


def test_write_is_atomic_and_uses_the_usual_permissions(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old\n", encoding="utf-8")
    write_table([{"a": "new"}], ["a"], str(path))
    assert path.read_text(encoding="utf-8") == "a\nnew\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # no temporary file left behind
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


def test_write_to_a_missing_folder_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="cannot write output"):
        write_table([{"a": "x"}], ["a"], str(tmp_path / "no" / "out.csv"))


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_lone_carriage_return_survives_a_round_trip(tmp_path, fmt):
    # Python 3.11's csv.writer leaves a lone CR unquoted under a LF terminator; read back, the row splits
    rows = [{"a": "x\ry", "b": "\r"}, {"a": "", "b": 'q"\r\n'}]
    path = tmp_path / f"t.{fmt}"
    write_table(rows, ["a", "b"], str(path))
    assert read_table(str(path)).rows == rows


def test_jsonl_lines_end_at_line_feeds_only(tmp_path):
    # JSON strings may hold U+2028, U+2029 and U+0085 unescaped (json.dumps(ensure_ascii=False) writes
    # them so); str.splitlines() would cut such a line in two
    rows = [{"a": "one\u2028two\u2029three\x85four\x1cfive\x0bsix"}, {"a": "next"}]
    path = tmp_path / "t.jsonl"
    write_table(rows, ["a"], str(path))
    table = read_table(str(path))
    assert table.rows == rows
    assert table.line_numbers == [1, 2]


def test_jsonl_lone_surrogate_escape_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": "\\ud83d\\ude00"}\n{"a": "x\\ud800"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2: a \\u escape gives a lone surrogate"):
        read_table(str(path))
    path.write_text('{"a": "\\ud83d\\ude00"}\n', encoding="utf-8")  # a pair is an emoji
    assert read_table(str(path)).rows == [{"a": "😀"}]


JSONL_AS_WRITTEN = [
    '{"id": 1, "predicted": 1e5, "ground_truth": "1e5", "f": 0.1000000000000000055511151231257827, "big": 12345678901234567890123}',
    '{"id":2,"predicted":7.10,"ground_truth":"7.10","x":"caf\\u00e9","n":-0.0,"deep":{"a":[1.50, 2E3]}}',
    '  { "predicted" : "Lyon" , "ground_truth" : "Paris" }  ',
]


def test_jsonl_numbers_are_scored_and_written_as_the_file_spells_them(cli, tmp_path):
    """A JSON number is text as its file spells it: scored so (exact mode: equal to the ground truth
    written as a string), written so into CSV; JSONL output is each input line as written, the added
    keys appended (no number respelt, no escape or spacing changed)."""
    source = tmp_path / "in.jsonl"
    source.write_text("\r\n".join(JSONL_AS_WRITTEN) + "\n", encoding="utf-8")
    for fmt in ("csv", "jsonl"):
        result = cli("score", source, "--mode", "exact", "-o", tmp_path / f"out.{fmt}", "-q")
        assert result.code == 0, result.err
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["score"] for r in rows] == ["1", "1", "0"]
    assert [r["predicted"] for r in rows] == ["1e5", "7.10", "Lyon"]
    assert rows[0]["f"] == "0.1000000000000000055511151231257827"
    assert rows[0]["big"] == "12345678901234567890123"
    assert rows[1]["x"] == "café" and rows[1]["n"] == "-0.0"
    written = (tmp_path / "out.jsonl").read_text(encoding="utf-8").split("\n")
    assert written == [
        JSONL_AS_WRITTEN[0][:-1] + ', "score": 1}',
        JSONL_AS_WRITTEN[1][:-1] + ', "score": 1}',
        '{ "predicted" : "Lyon" , "ground_truth" : "Paris", "score": 0}',
        "",
    ]
    assert [json.loads(line) for line in written[:-1]][1]["deep"] == {"a": [1.5, 2000.0]}
