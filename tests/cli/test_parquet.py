"""Parquet in and out of ``simkernel score`` (pyarrow): input column types kept, the score column's type
per mode, lists in cells, the same scores as CSV, errors before the model loads, the missing extra."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.cli.conftest import EXAMPLES, read_csv_rows
from tests.cli.scale_data import distinct_rows, write_csv, write_jsonl, write_parquet

N = 60


@pytest.fixture
def rows():
    return distinct_rows(N)


def test_csv_to_parquet_keeps_every_column_and_adds_float32_scores(cli, tmp_path, rows, minilm):
    source = write_csv(rows, tmp_path / "in.csv")
    assert cli("score", source, "-q", "-o", tmp_path / "o.csv", "--threshold", "0.5").code == 0
    result = cli(
        "score", source, "-q", "-o", tmp_path / "o.parquet", "--threshold", "0.5", "--chunk-rows", 25
    )
    assert result.code == 0, result.err
    table = pq.read_table(tmp_path / "o.parquet")
    assert table.schema.names == ["id", "ground_truth", "predicted", "label", "score", "success"]
    assert [table.schema.field(n).type for n in table.schema.names] == [pa.string()] * 4 + [
        pa.float32(),
        pa.bool_(),
    ]
    assert pq.ParquetFile(tmp_path / "o.parquet").metadata.num_row_groups == 3  # one per chunk
    from_csv = read_csv_rows(tmp_path / "o.csv")
    assert table.column("id").to_pylist() == [r["id"] for r in from_csv]
    # the float32 score is the one the CSV writes in shortest round-trip form
    assert table.column("score").to_pylist() == [float(r["score"]) for r in from_csv]
    assert table.column("success").to_pylist() == [r["success"] == "true" for r in from_csv]


def test_parquet_to_parquet_keeps_the_input_types_and_lists_of_ground_truths(cli, tmp_path, minilm):
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "asked_at": pa.array([1, 2, 3], pa.timestamp("s")),
            "ground_truth": pa.array([["Paris", "the capital of France"], ["Berlin"], ["北京"]]),
            "predicted": ["France's capital", "Berlin", "北京市"],
            "label": pa.array([2.0, None, 1.5], pa.float32()),
        }
    )
    pq.write_table(data, tmp_path / "in.parquet")
    result = cli("score", tmp_path / "in.parquet", "-o", tmp_path / "o.parquet", "--label", "label")
    assert result.code == 0, result.err
    out, original = pq.read_table(tmp_path / "o.parquet"), pq.read_table(tmp_path / "in.parquet")
    assert out.drop_columns(["score"]).equals(original)  # every column, its type and values
    assert original.schema.field("asked_at").type == pa.timestamp("ms")  # as Parquet stores seconds
    assert out.schema.field("score").type == pa.float32()
    from simkernel.components.evaluators import SASEvaluator

    evaluator = SASEvaluator(model=minilm)
    pairs = [("France's capital", "Paris"), ("France's capital", "the capital of France")]
    best = max(evaluator.run([g], [p])["individual_scores"][0] for p, g in pairs)
    assert out.column("score")[0].as_py() == np.float32(best)
    assert out.column("score")[1].as_py() == pytest.approx(1.0, abs=1e-6)
    assert "(2 of 3 rows labelled)" in result.err


def test_parquet_in_csv_out_equals_csv_in_csv_out(cli, tmp_path, rows, minilm):
    write_parquet(rows, tmp_path / "in.parquet")
    write_csv(rows, tmp_path / "in.csv")
    assert cli("score", tmp_path / "in.parquet", "-q", "-o", tmp_path / "a.csv", "--chunk-rows", 16).code == 0
    assert cli("score", tmp_path / "in.csv", "-q", "-o", tmp_path / "b.csv").code == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_reference_mode_writes_float64_scores(cli, tmp_path, minilm):
    result = cli(
        "score", EXAMPLES / "references.jsonl", "--mode", "reference", "-q", "-o", tmp_path / "o.parquet"
    )
    assert result.code == 0, result.err
    assert (
        cli(
            "score", EXAMPLES / "references.jsonl", "--mode", "reference", "-q", "-o", tmp_path / "o.jsonl"
        ).code
        == 0
    )
    table = pq.read_table(tmp_path / "o.parquet")
    assert table.schema.field("score").type == pa.float64()
    assert table.schema.field("references").type == pa.list_(pa.string())
    expected = [json.loads(line)["score"] for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert table.column("score").to_pylist() == expected


def test_jsonl_to_parquet_widens_numbers_and_rejects_mixed_columns(cli, tmp_path, minilm):
    ok = [{"ground_truth": "a", "predicted": "b", "n": 1}, {"ground_truth": "c", "predicted": "d", "n": 2.5}]
    write_jsonl(ok, tmp_path / "ok.jsonl")
    assert (
        cli("score", tmp_path / "ok.jsonl", "-q", "-o", tmp_path / "ok.parquet", "--chunk-rows", 1).code == 0
    )
    assert pq.read_table(tmp_path / "ok.parquet").column("n").to_pylist() == [1.0, 2.5]
    mixed = ok + [{"ground_truth": "e", "predicted": "f", "n": "three"}]
    write_jsonl(mixed, tmp_path / "mixed.jsonl")
    result = cli("score", tmp_path / "mixed.jsonl", "-o", tmp_path / "m.parquet", "--model", "acme/not-there")
    assert result.code == 1  # before the (missing) model is looked for
    assert (
        "a column holds values of different kinds" in result.err and "write CSV or JSONL output" in result.err
    )
    assert not (tmp_path / "m.parquet").exists()


def test_parquet_through_stdin_and_stdout(cli, tmp_path, rows, minilm):
    write_parquet(rows, tmp_path / "in.parquet")
    assert cli("score", tmp_path / "in.parquet", "-q", "-o", tmp_path / "o.parquet").code == 0
    piped = subprocess.run(
        [sys.executable, "-m", "simkernel", "score", "-", "-q", "--output-format", "parquet"],
        input=(tmp_path / "in.parquet").read_bytes(),
        capture_output=True,
        timeout=600,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr.decode()
    assert pq.read_table(io.BytesIO(piped.stdout)).equals(pq.read_table(tmp_path / "o.parquet"))


def test_a_bad_row_of_a_parquet_file_is_named_by_its_row(cli, tmp_path, rows):
    rows[41]["predicted"] = "   "
    write_parquet(rows, tmp_path / "bad.parquet")
    result = cli("score", tmp_path / "bad.parquet", "--chunk-rows", 10, "-o", tmp_path / "o.csv")
    assert result.code == 1
    assert "bad.parquet row 42: column 'predicted' is empty" in result.err


def test_not_a_parquet_file(cli, tmp_path):
    (tmp_path / "x.parquet").write_text("a,b\n1,2\n", encoding="utf-8")
    result = cli("score", tmp_path / "x.parquet")
    assert result.code == 1 and "is not a readable Parquet file" in result.err


@pytest.mark.parametrize("where", ["input", "output"])
def test_without_pyarrow_the_error_names_the_extra(tmp_path, where):
    write_csv(distinct_rows(3), tmp_path / "in.csv")
    (tmp_path / "in.parquet").write_bytes(b"PAR1")
    argv = ["score", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "o.csv")]
    if where == "output":
        argv = ["score", str(tmp_path / "in.csv"), "-o", str(tmp_path / "o.parquet")]
    code = (
        "import sys; sys.modules['pyarrow'] = None\n"  # as if pyarrow were not installed
        "from simkernel.cli import main\n"
        f"sys.exit(main({argv!r}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, check=False)
    assert result.returncode == 1
    err = result.stderr.decode()
    assert len(err.strip().splitlines()) == 1 and "pip install 'simkernel[parquet]'" in err


def test_numbers_and_bytes_are_written_and_scored_as_the_file_holds_them(cli, tmp_path):
    """A float32 is 0.1 in the file, not the float64 0.10000000149011612 it widens to: a text column of
    float32 scores "0.1" (exact mode: equal to the ground truth's text), CSV and JSONL output write 0.1
    (in lists and structs too), and bytes are base64 in both text formats."""
    import base64

    values = [0.1, 2.5, 1e5, 3.4028235e38]
    f32 = [float(str(np.float32(v))) for v in values]  # numpy's shortest float32 text: the reference
    blobs = [b"\x00\x01", b"x", None, b"\xff"]
    table = pa.table(
        {
            "predicted": pa.array(values, pa.float32()),
            "ground_truth": [str(np.float32(v)) for v in values],
            "weight": pa.array([0.3, 0.7, 1.1, 2.2], pa.float32()),
            "many": pa.array([[0.1, 0.2], [], None, [0.3]], pa.list_(pa.float32())),
            "nested": pa.array([{"x": 0.1}] * 4, pa.struct([("x", pa.float32())])),
            "blob": pa.array(blobs, pa.binary()),
        }
    )
    pq.write_table(table, tmp_path / "in.parquet")
    for fmt in ("csv", "jsonl"):
        result = cli("score", tmp_path / "in.parquet", "--mode", "exact", "-o", tmp_path / f"o.{fmt}", "-q")
        assert result.code == 0, result.err
    rows = read_csv_rows(tmp_path / "o.csv")
    assert [r["score"] for r in rows] == ["1"] * 4  # the text scored is the float32's own
    assert [r["predicted"] for r in rows] == [repr(v) for v in f32]
    assert [r["weight"] for r in rows] == ["0.3", "0.7", "1.1", "2.2"]
    assert [r["many"] for r in rows] == ["[0.1, 0.2]", "[]", "", "[0.3]"]
    assert rows[0]["nested"] == '{"x": 0.1}'
    encoded = [base64.b64encode(b).decode("ascii") if b is not None else None for b in blobs]
    assert [r["blob"] for r in rows] == [e or "" for e in encoded]
    lines = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["predicted"] for r in lines] == f32
    assert [r["weight"] for r in lines] == [0.3, 0.7, 1.1, 2.2]
    assert [r["many"] for r in lines] == [[0.1, 0.2], [], None, [0.3]]
    assert [r["blob"] for r in lines] == encoded


def test_duplicate_column_names_are_refused(cli, tmp_path):
    """A row of Python values keeps one of two equal names: the other column would be lost."""
    table = pa.Table.from_arrays(
        [pa.array(["Paris"]), pa.array(["Lyon"]), pa.array(["Paris"])],
        names=["predicted", "predicted", "ground_truth"],
    )
    pq.write_table(table, tmp_path / "dup.parquet")
    for out in ("o.csv", "o.parquet"):
        result = cli("score", tmp_path / "dup.parquet", "--mode", "exact", "-o", tmp_path / out)
        assert result.code == 1
        assert (
            f"{tmp_path / 'dup.parquet'}: duplicate column names ['predicted']; give each column its own name"
            in result.err
        )
        assert not (tmp_path / out).exists()


def test_a_parquet_file_without_rows_keeps_its_schema(cli, tmp_path):
    schema = pa.schema(
        [("id", pa.int32()), ("predicted", pa.string()), ("ground_truth", pa.string()), ("when", pa.date32())]
    )
    pq.write_table(schema.empty_table(), tmp_path / "empty.parquet")
    result = cli("score", tmp_path / "empty.parquet", "-o", tmp_path / "o.parquet", "-q")
    assert result.code == 0, result.err
    expected = schema.append(pa.field("score", pa.float32()))
    assert pq.read_schema(tmp_path / "o.parquet").remove_metadata().equals(expected)
    assert pq.read_table(tmp_path / "o.parquet").num_rows == 0
    piped = subprocess.run(
        [sys.executable, "-m", "simkernel", "score", str(tmp_path / "empty.parquet"), "-q"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr.decode()
    assert pq.read_schema(io.BytesIO(piped.stdout)).remove_metadata().equals(expected)
