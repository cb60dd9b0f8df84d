"""The checking of ``--engine ray`` while it scores (:mod:`simkernel.batch.survey`): the bound on the rows
that sizes the blocks, an input without rows, which needs no cluster at all, and JSONL checked as read
(its keys gathered, its errors those of the checking pass)."""

from __future__ import annotations

import pytest
from tests.cli.scale_data import write_csv, write_jsonl

from simkernel.cli import main
from simkernel.tables.formats import rows_at_most


@pytest.mark.parametrize(
    ("data", "rows"),
    [
        (b"a,b\n", 0),
        (b"a,b", 0),
        (b"a,b\n1,2\n", 1),
        (b"a,b\n1,2", 1),
        (b"a,b\r\n1,2\r\n\r\n", 2),  # a blank line counts: the bound may be above, never below
        (b"a,b\r1,2\r3,4", 2),
        (b'a,b\n"two\nlines",2\n', 2),
    ],
)
def test_the_bound_is_never_below_the_rows(tmp_path, data, rows):
    (tmp_path / "in.csv").write_bytes(data)
    assert rows_at_most(str(tmp_path / "in.csv"), "csv") == rows


def test_a_csv_without_rows_is_written_without_starting_ray(tmp_path, monkeypatch):
    from simkernel.ray.engine import RayEngine

    def no_cluster(self):
        raise AssertionError("the engine loaded for an input without rows")

    monkeypatch.setattr(RayEngine, "load", no_cluster)
    (tmp_path / "in.csv").write_text("predicted,ground_truth\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    assert main(["score", str(tmp_path / "in.csv"), "-o", str(out), "-q", "--engine", "ray"]) == 0
    assert out.read_text(encoding="utf-8") == "predicted,ground_truth,score\n"


# ------------------------------------------------------------------ JSONL checked as read (--engine ray)
def jsonl(path, rows: list[dict]) -> str:
    return str(write_jsonl(rows, path))


def streamed(path: str, *options: str, chunk_rows: int = 2):
    """checked_as_read over ``path`` as ``simkernel score PATH OPTIONS --engine ray`` runs it: a generator
    of the checked chunks, and the survey it fills."""
    from simkernel.batch.job import ScoreJob
    from simkernel.batch.rows import RowChecker, RowProblems, columns_of
    from simkernel.batch.survey import Survey, checked_as_read
    from simkernel.cli.parser import build_parser
    from simkernel.tables.readers import open_table

    args = ScoreJob.from_namespace(build_parser().parse_args(["score", path, *options, "--engine", "ray"]))
    reader = open_table(path)
    checker = RowChecker(args, columns_of(args), reader.format)
    survey = Survey()
    problems = RowProblems(reader.source, reader.unit)
    chunks = checked_as_read(reader.chunks(chunk_rows), checker, problems, survey, args, 0, reader.source)
    return chunks, survey


def checking_pass_error(path: str, *options: str, capsys) -> str:
    """The error of the local engine's checking pass on ``path`` (``--mode exact`` loads no model)."""
    assert main(["score", path, *options, "-q"]) == 1
    return capsys.readouterr().err.strip().removeprefix("simkernel: error: ")


ROWS = [
    {"predicted": "Москва — столица.", "ground_truth": "Столица — Москва.", "id": 1},
    {"predicted": "北京是首都。", "ground_truth": "首都是北京。", "note": "zh"},
    {"predicted": "Paris.", "ground_truth": "It is Paris."},
    {"predicted": "Four.", "ground_truth": "Two plus two is four.", "extra": [1, 2]},
    {"predicted": "Five.", "ground_truth": "Five it is."},
]


def test_jsonl_chunks_are_handed_on_as_read_and_gather_every_key(tmp_path):
    path = jsonl(tmp_path / "in.jsonl", ROWS)
    assert rows_at_most(path, "jsonl") == len(ROWS)  # no header line to leave out
    chunks, survey = streamed(path)
    first = next(chunks)  # the first chunk comes before the rest of the file is read
    assert first.predicted == [ROWS[0]["predicted"], ROWS[1]["predicted"]] and survey.rows == 2
    assert list(survey.columns) == ["predicted", "ground_truth", "id", "note"]
    rest = list(chunks)
    assert [len(c) for c in rest] == [2, 1] and survey.rows == len(ROWS)
    assert list(survey.columns) == ["predicted", "ground_truth", "id", "note", "extra"]


def test_jsonl_row_with_the_score_column_stops_the_run_with_the_checking_pass_error(tmp_path, capsys):
    from simkernel.batch.survey import BadInput

    rows = [dict(r) for r in ROWS]
    rows[3]["score"] = 0.5  # the 2nd chunk: the column the output adds
    rows[4]["predicted"] = " "  # and a bad row after it
    path = jsonl(tmp_path / "clash.jsonl", rows)
    expected = checking_pass_error(path, "--mode", "exact", capsys=capsys)
    assert "already has a column 'score'" in expected
    chunks, _ = streamed(path, "--mode", "exact")
    assert len(next(chunks)) == 2  # the first chunk is clean
    with pytest.raises(BadInput) as raised:
        next(chunks)  # the second is never handed on
    assert str(raised.value) == expected


def test_jsonl_column_no_row_has_and_bad_rows_give_the_checking_pass_error(tmp_path, capsys):
    from simkernel.batch.survey import BadInput

    path = jsonl(tmp_path / "missing.jsonl", [{"answer": r["predicted"]} for r in ROWS])
    expected = checking_pass_error(path, "--mode", "exact", capsys=capsys)
    assert "has no column 'predicted'" in expected and "columns found: answer" in expected
    with pytest.raises(BadInput) as raised:
        list(streamed(path, "--mode", "exact")[0])
    assert str(raised.value) == expected

    rows = [dict(r) for r in ROWS]
    rows[4]["predicted"] = ""
    path = jsonl(tmp_path / "bad.jsonl", rows)
    expected = checking_pass_error(path, "--mode", "exact", capsys=capsys)
    assert "line 5" in expected
    chunks, _ = streamed(path, "--mode", "exact")
    assert [len(next(chunks)), len(next(chunks))] == [2, 2]  # the chunks before the bad row go on
    with pytest.raises(BadInput) as raised:
        next(chunks)
    assert str(raised.value) == expected


def test_jsonl_label_column_no_row_has_fails_at_the_end(tmp_path, capsys):
    from simkernel.batch.survey import BadInput

    path = jsonl(tmp_path / "nolabel.jsonl", ROWS)
    options = ("--mode", "exact", "--label", "human")
    expected = checking_pass_error(path, *options, capsys=capsys)
    assert "has no label column 'human'" in expected
    with pytest.raises(BadInput) as raised:
        list(streamed(path, *options)[0])
    assert str(raised.value) == expected


@pytest.mark.parametrize(
    ("out_name", "streams"),
    [("out.jsonl", True), ("out.csv", False), ("out.parquet", False), ("-", False), ("-.csv", False)],
)
def test_jsonl_streams_only_when_written_as_jsonl_to_a_file(tmp_path, monkeypatch, capsys, out_name, streams):
    """JSONL to a JSONL file is checked while it is scored (the engine starts first, then the bad row stops
    it); to CSV or Parquet, or to stdout (JSONL or CSV: printed rows could not be taken back), the checking
    pass finds the bad row before the engine starts. Same error; no OUT, nothing on stdout."""
    from simkernel.ray.engine import RayEngine

    started = []

    def instant_cluster(self):  # the driver's side only: no Ray here (tests/ray runs the real cluster)
        started.append(True)
        self.workers = 1

    def zeros(self, inputs, rows):
        for chunk in inputs:
            yield [0.0] * len(chunk)

    monkeypatch.setattr(RayEngine, "load", instant_cluster)
    monkeypatch.setattr(RayEngine, "scores", zeros)
    rows = [dict(r) for r in ROWS]
    rows[4]["predicted"] = ""
    path = jsonl(tmp_path / "in.jsonl", rows)
    expected = checking_pass_error(path, capsys=capsys)  # mode sas: the pass fails before the model loads
    to_stdout = out_name.startswith("-")
    output = ["-o", "-"] + (["--output-format", "csv"] if out_name == "-.csv" else [])
    out = tmp_path / out_name
    argv = ["score", path, *(output if to_stdout else ["-o", str(out)]), "--chunk-rows", "2", "-q"]
    assert main([*argv, "--engine", "ray"]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip().removeprefix("simkernel: error: ") == expected
    assert bool(started) is streams
    assert captured.out == ""
    assert not out.exists() and not list(tmp_path.glob(f".{out_name}*"))


def test_csv_to_stdout_keeps_the_checking_pass(tmp_path, monkeypatch, capsys):
    """A bad row late in a CSV written to stdout fails before the engine starts: nothing printed."""
    from simkernel.ray.engine import RayEngine

    def no_cluster(self):
        raise AssertionError("the engine started before the checking pass found the bad row")

    monkeypatch.setattr(RayEngine, "load", no_cluster)
    rows = [{"predicted": r["predicted"], "ground_truth": r["ground_truth"]} for r in ROWS]
    rows[4]["predicted"] = ""
    source = write_csv(rows, tmp_path / "in.csv")
    argv = ["score", str(source), "-o", "-", "--chunk-rows", "2", "-q", "--engine", "ray"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert f"{source} line 6: column 'predicted' is empty" in captured.err
    assert captured.out == ""
