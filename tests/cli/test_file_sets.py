"""A folder or glob given to ``simkernel score --engine ray`` (:mod:`simkernel.tables.file_sets`): which files it
names, in which order, and the errors before any work (no Ray needed: these fail before it starts)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.cli.scale_data import distinct_rows, write_csv

from simkernel.cli import main
from simkernel.errors import DataError, UsageError
from simkernel.tables.file_sets import is_file_set, open_file_set


def test_a_folder_names_its_tables_in_sorted_order_without_hidden_or_marker_files(tmp_path):
    for name in ("b.csv", "a.csv", "c10.csv", "c2.csv"):
        write_csv(distinct_rows(3), tmp_path / name)
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".a.csv.crc").write_text("")
    fs = open_file_set(str(tmp_path), None)
    assert [Path(f).name for f in fs.files] == ["a.csv", "b.csv", "c10.csv", "c2.csv"]
    assert fs.format == "csv" and fs.columns == ["id", "ground_truth", "predicted", "label"]
    glob_set = open_file_set(str(tmp_path / "c*.csv"), None)
    assert [Path(f).name for f in glob_set.files] == ["c10.csv", "c2.csv"]
    assert is_file_set(str(tmp_path)) and is_file_set(str(tmp_path / "*.csv"))
    assert not is_file_set(str(tmp_path / "a.csv")) and not is_file_set("-")


def test_the_fingerprint_changes_when_a_file_does(tmp_path):
    write_csv(distinct_rows(3), tmp_path / "a.csv")
    before = open_file_set(str(tmp_path), None).fingerprint()
    write_csv(distinct_rows(4), tmp_path / "b.csv")
    assert open_file_set(str(tmp_path), None).fingerprint() != before


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda d: None, DataError, "names no CSV, TSV or Parquet file"),
        (
            lambda d: (
                write_csv(distinct_rows(2), d / "a.csv"),
                pq.write_table(pa.table({"x": [1]}), d / "b.parquet"),
            ),
            DataError,
            "holds files of several formats (csv, parquet)",
        ),
        (
            lambda d: (
                write_csv(distinct_rows(2), d / "a.csv"),
                (d / "b.csv").write_text("id,predicted\n1,x\n"),
            ),
            DataError,
            "has other columns than",
        ),
        (lambda d: (d / "a.jsonl").write_text('{"predicted": "x"}\n'), UsageError, "not jsonl"),
    ],
)
def test_a_bad_file_set_fails_before_any_work(tmp_path, make, error, message):
    make(tmp_path)
    with pytest.raises(error, match=None) as caught:
        open_file_set(str(tmp_path), None)
    assert message in str(caught.value)


def test_the_command_line_names_the_problem_of_a_file_set(tmp_path, capsys):
    write_csv(distinct_rows(2), tmp_path / "a.csv")
    (tmp_path / "b.csv").write_text("id,predicted\n1,x\n")
    assert main(["score", str(tmp_path), "--engine", "ray", "-o", str(tmp_path / "out.csv")]) == 1
    err = capsys.readouterr().err
    assert "has other columns than" in err and "every file of" in err
    assert not (tmp_path / "out.csv").exists()
