"""Fuzzing the command line's readers (CSV, TSV, JSONL) through ``simkernel score`` itself.

Each generated file is scored in this process with ``--mode exact`` (no model needed, so thousands of
cases run in seconds) into an OUT that already holds other content. Whatever the bytes, the outcome is
either a result (exit 0, OUT complete: every row the reference reader finds, in order, values
unchanged, the exact-match score right) or a one-line error (exit 1, ``simkernel: error: ...``, OUT
untouched); never a traceback (an exception escaping ``main`` fails the test), never a partial OUT.

Generated: well-formed tables of hostile text (quotes, delimiters, CR/LF/CRLF, NUL, BOMs, Russian and
Chinese, a 2.4 MB field), the same tables written with naive (unbalanced) quoting, byte-level mutations
of them (truncation, invalid UTF-8 inserted), and random bytes. A well-formed file must score
(exit 0): a reader that rejects valid data fails here too.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz_settings import fuzz

from simkernel.cli import main

SENTINEL = b"previous content of OUT\n"
# characters that break naive readers, plus ordinary, Russian and Chinese ones
HOSTILE = list(",\"\t\n\r\x00\ufeff\x85\u2028\u2029 '\\{}[]:") + ["Париж", "北京", "é", "\x1e", "\x0c"]


PIECES = [*HOSTILE, "a", "Berlin", "Лев Толстой", "法国的首都是巴黎。", "  ", "😀"]
# lines a JSONL file may hold: lone surrogate escapes (not text: an error) and a pair (an emoji: fine)
SURROGATE_LINES = [
    '{"ground_truth": "\\ud83d", "predicted": "a"}',
    '{"ground_truth": "a", "predicted": "x\\ude00", "note": ["\\udfff"]}',
    '{"ground_truth": "\\ud83d\\ude00", "predicted": "\\ud83d\\ude00"}',
]
# texts built from hostile pieces (cheap to generate), and any unicode text now and then
TEXT = st.lists(st.sampled_from(PIECES), max_size=6).map("".join) | st.text(max_size=4)
ROWS = st.lists(st.tuples(TEXT, TEXT, TEXT), max_size=8)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    """One folder for every case of the module (each case overwrites IN and OUT), in memory where the
    machine has /dev/shm: thousands of create-and-rename cycles on a disk take minutes, not seconds."""
    shm = Path("/dev/shm")
    folder = (
        Path(tempfile.mkdtemp(prefix="simkernel-fuzz-", dir=shm))
        if shm.is_dir()
        else tmp_path_factory.mktemp("fuzz")
    )
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def parser_built_once():
    """``main`` builds its argparse parser at every call (~35 ms); the fuzz cases share one."""
    from simkernel.cli import parser

    built = parser.build_parser()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parser, "build_parser", lambda: built)
        yield


def run_cli(tmp: Path, data: bytes, ext: str, out_ext: str) -> tuple[int, str, Path]:
    src = tmp / f"in.{ext}"
    src.write_bytes(data)
    out = tmp / f"out.{out_ext}"
    out.write_bytes(SENTINEL)
    err, stdout = io.StringIO(), io.StringIO()
    argv = ["score", str(src), "--mode", "exact", "--allow-empty", "--quiet", "--output", str(out)]
    with redirect_stderr(err), redirect_stdout(stdout):
        code = main(argv)  # an exception here is a traceback the user would see: the test fails
    return code, err.getvalue(), out


def check_outcome(code: int, err: str, out: Path) -> bool:
    """The contract for any input; returns whether a result was written."""
    assert code in (0, 1), (code, err)
    if code == 1:
        assert err.startswith("simkernel: error: ") and err.endswith("\n"), err
        assert err.count("\n") == 1, err  # one line
        assert out.read_bytes() == SENTINEL, "a failed run changed OUT"
        return False
    assert out.read_bytes() != SENTINEL
    return True


def reference_delimited(data: bytes, delimiter: str) -> list[list[str]] | None:
    """The records Python's csv module finds (the reference reader), or None if it rejects the file."""
    try:
        text = data.decode("utf-8-sig")
        return [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True) if r]
    except (UnicodeDecodeError, csv.Error):
        return None


def check_delimited_result(data: bytes, out: Path, delimiter: str, out_delimiter: str) -> None:
    records = reference_delimited(data, delimiter)
    assert records, "exit 0 on a file the reference reader rejects or finds empty"
    header = [h.strip() for h in records[0]]
    with open(out, newline="", encoding="utf-8") as handle:
        written = list(csv.reader(handle, delimiter=out_delimiter))
    assert written[0] == [*header, "score"]
    assert len(written) - 1 == len(records) - 1, "rows lost or added"
    for source, row in zip(records[1:], written[1:], strict=True):
        assert row[:-1] == source  # every value unchanged, in order
        values = dict(zip(header, source, strict=True))
        assert float(row[-1]) == float(values["ground_truth"] == values["predicted"])


def render_csv(rows, delimiter: str, terminator: str, bom: bool, quote_all: bool = False) -> bytes:
    """A well-formed table (RFC 4180 quoting: a field holding the delimiter, a quote, CR or LF is quoted,
    its quotes doubled). Not csv.writer: Python 3.11's writer leaves a lone CR unquoted under a LF
    line terminator, which no reader can read back."""

    def field(value: str) -> str:
        if quote_all or any(c in value for c in (delimiter, '"', "\r", "\n")):
            return '"' + value.replace('"', '""') + '"'
        return value

    lines = [delimiter.join(field(v) for v in row) for row in [("ground_truth", "predicted", "note"), *rows]]
    # a record of one empty field would be a blank line; ours have three fields, so none is blank
    text = "".join(line + terminator for line in lines)
    return ("\ufeff" if bom else "").encode() + text.encode("utf-8")


def render_naive(rows, delimiter: str, terminator: str) -> bytes:
    lines = [delimiter.join(["ground_truth", "predicted", "note"])]
    lines += [delimiter.join(row) for row in rows]
    return terminator.join(lines).encode("utf-8", errors="surrogatepass")


MUTATION = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.binary(min_size=1, max_size=4)),
    st.tuples(
        st.just("insert"), st.floats(0, 1), st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"])
    ),
)


def mutate(data: bytes, mutations) -> bytes:
    for kind, where, *rest in mutations:
        at = int(where * len(data))
        data = data[:at] if kind == "truncate" else data[:at] + rest[0] + data[at:]
    return data


# -- CSV and TSV --------------------------------------------------------------------------------------
@fuzz(2000)
@given(
    rows=ROWS,
    delimiter=st.sampled_from([",", "\t"]),
    terminator=st.sampled_from(["\n", "\r\n", "\r"]),
    bom=st.booleans(),
    quote_all=st.booleans(),
)
def test_well_formed_tables_score(fuzz_dir, rows, delimiter, terminator, bom, quote_all):
    ext = "csv" if delimiter == "," else "tsv"
    data = render_csv(rows, delimiter, terminator, bom, quote_all)
    code, err, out = run_cli(fuzz_dir, data, ext, ext)
    assert code == 0, f"a well-formed {ext.upper()} file was rejected: {err}"
    check_outcome(code, err, out)
    check_delimited_result(data, out, delimiter, delimiter)


@fuzz(1500)
@given(
    rows=ROWS,
    delimiter=st.sampled_from([",", "\t"]),
    terminator=st.sampled_from(["\n", "\r\n", "\r"]),
    naive=st.booleans(),
    mutations=st.lists(MUTATION, max_size=3),
)
def test_damaged_tables_score_or_fail_in_one_line(fuzz_dir, rows, delimiter, terminator, naive, mutations):
    ext = "csv" if delimiter == "," else "tsv"
    clean = (
        render_naive(rows, delimiter, terminator) if naive else render_csv(rows, delimiter, terminator, False)
    )
    data = mutate(clean, mutations)
    code, err, out = run_cli(fuzz_dir, data, ext, "csv")
    if check_outcome(code, err, out):
        check_delimited_result(data, out, delimiter, ",")


# -- JSONL --------------------------------------------------------------------------------------------
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


@fuzz(1500)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {"ground_truth": TEXT, "predicted": TEXT},  # a list of ground truths is for --mode sas
            optional={"note": JSON_VALUE, "label": JSON_VALUE},
        ),
        max_size=10,
    ),
    terminator=st.sampled_from(["\n", "\r\n"]),
    ascii_only=st.booleans(),
)
def test_well_formed_jsonl_scores(fuzz_dir, rows, terminator, ascii_only):
    text = "".join(json.dumps(row, ensure_ascii=ascii_only) + terminator for row in rows)
    code, err, out = run_cli(fuzz_dir, text.encode("utf-8"), "jsonl", "jsonl")
    assert code == 0, f"a well-formed JSONL file was rejected: {err}"
    check_outcome(code, err, out)
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]
    assert len(written) == len(rows), "rows lost or added"
    for row, got in zip(rows, written, strict=True):
        assert {k: v for k, v in got.items() if k != "score"} == row
        assert got["score"] == float(row["predicted"] == row["ground_truth"])


@fuzz(1000)
@given(
    lines=st.lists(
        JSON_VALUE.map(lambda v: json.dumps(v, ensure_ascii=False)) | TEXT | st.sampled_from(SURROGATE_LINES),
        max_size=8,
    ),
    mutations=st.lists(MUTATION, max_size=2),
)
def test_damaged_jsonl_scores_or_fails_in_one_line(fuzz_dir, lines, mutations):
    data = mutate("\n".join(lines).encode("utf-8", errors="surrogatepass"), mutations)
    code, err, out = run_cli(fuzz_dir, data, "jsonl", "jsonl")
    check_outcome(code, err, out)


# -- anything at all ----------------------------------------------------------------------------------
@fuzz(1000)
@given(data=st.binary(max_size=400), ext=st.sampled_from(["csv", "tsv", "jsonl"]))
def test_random_bytes_score_or_fail_in_one_line(fuzz_dir, data, ext):
    code, err, out = run_cli(fuzz_dir, data, ext, ext)
    check_outcome(code, err, out)


@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl"])
def test_a_huge_single_field_is_read_whole(tmp_path, ext):
    big = "Лев Толстой " * 200_000  # 2.4 MB of Cyrillic in one field
    if ext == "jsonl":
        data = json.dumps({"ground_truth": big, "predicted": big}, ensure_ascii=False).encode() + b"\n"
    else:
        data = render_csv([(big, big, "")], "," if ext == "csv" else "\t", "\n", False)
    code, err, out = run_cli(tmp_path, data, ext, ext)
    assert code == 0, err
    assert big in out.read_text(encoding="utf-8")
