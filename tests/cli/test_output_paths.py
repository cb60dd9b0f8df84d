"""The files a command writes (``--output``, ``--summary-json``, ``--report``, ``--output-json``) are checked
before any work: a path that is the input (or a link to it) is refused (exit 2) and the input is kept;
a directory, a missing folder, a folder that is a file, or two options naming one file fail in one line
before the input is read or a model loads, and leave nothing behind."""

from __future__ import annotations

import os

import pytest

import simkernel
from simkernel.errors import UsageError

ROWS = '{"predicted": "Paris", "ground_truth": "Paris", "label": 1}\n{"predicted": "Lyon", "ground_truth": "Paris", "label": 0}\n'


def one_line_error(result, code: int, *fragments: str) -> str:
    assert result.code == code, result.err
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("simkernel: error: "), result.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_an_output_that_is_the_input_is_refused_and_the_input_kept(cli, write, tmp_path):
    path = write("m.jsonl", ROWS)
    os.symlink(path, tmp_path / "link.jsonl")
    os.link(path, tmp_path / "hard.jsonl")
    for out in (path, tmp_path / "link.jsonl", tmp_path / "hard.jsonl", f"{tmp_path}/./m.jsonl"):
        result = cli("score", path, "--mode", "exact", "-o", out, "--output-format", "csv", "-q")
        one_line_error(result, 2, f"--output '{out}' is the input file", "give --output another path")
    for option in ("--summary-json", "--report"):
        result = cli("score", path, "--mode", "exact", "-o", tmp_path / "out.jsonl", option, path, "-q")
        one_line_error(result, 2, f"{option} '{path}' is the input file")
    assert (tmp_path / "m.jsonl").read_text(encoding="utf-8") == ROWS
    assert not (tmp_path / "out.jsonl").exists()
    with pytest.raises(UsageError, match="is the input file"):
        simkernel.score_file(path, path, metric="exact")
    assert (tmp_path / "m.jsonl").read_text(encoding="utf-8") == ROWS


@pytest.mark.parametrize(
    ("options", "fragments"),
    [
        (
            ["-o", "{tmp}/folder.csv"],
            ["--output '{tmp}/folder.csv' is a directory", "give the path of a file"],
        ),
        (["-o", "{tmp}/no/out.csv"], ["its folder '{tmp}/no' does not exist", "mkdir -p {tmp}/no"]),
        (["-o", "{tmp}/file.txt/out.csv"], ["'{tmp}/file.txt' is not a folder"]),
        (["--summary-json", "{tmp}/no/s.json"], ["--summary-json '{tmp}/no/s.json': its folder"]),
        (["--summary-json", "{tmp}/folder.csv"], ["--summary-json '{tmp}/folder.csv' is a directory"]),
        (
            ["--report", "{tmp}/no/r.html"],
            ["--report '{tmp}/no/r.html': its folder '{tmp}/no' does not exist"],
        ),
    ],
)
def test_a_bad_output_path_fails_before_the_model_loads(cli, write, tmp_path, options, fragments):
    """The model named does not exist: an output path checked after the scoring would meet that first."""
    path = write("in.jsonl", ROWS)
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "file.txt").write_text("", encoding="utf-8")
    argv = [a.format(tmp=tmp_path) for a in options]
    result = cli("score", path, "--model", tmp_path / "no-such-model", "-q", *argv)
    one_line_error(result, 1, *[f.format(tmp=tmp_path) for f in fragments])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "folder.csv", "in.jsonl"]
    assert list((tmp_path / "folder.csv").iterdir()) == []


def test_two_options_naming_one_file_are_refused(cli, write, tmp_path):
    path = write("in.csv", "predicted,ground_truth\nParis,Paris\n")
    out = tmp_path / "out.csv"
    result = cli("score", path, "--mode", "exact", "-o", out, "--summary-json", out, "-q")
    one_line_error(
        result, 2, f"--output and --summary-json both name the file '{out}'", "give each its own path"
    )
    assert not out.exists()


@pytest.mark.parametrize("option", ["--output-json", "--report"])
def test_calibrate_and_compare_check_their_outputs_first(cli, write, tmp_path, option):
    """The inputs do not exist: an output checked after reading them would meet that first."""
    missing = tmp_path / "missing.csv"
    bad = tmp_path / "no" / "x.out"
    result = cli("calibrate", missing, "--label", "label", option, bad, "-q")
    one_line_error(result, 1, f"{option} '{bad}': its folder '{tmp_path / 'no'}' does not exist")
    result = cli("compare", missing, missing, option, bad, "-q")
    one_line_error(result, 1, f"{option} '{bad}': its folder '{tmp_path / 'no'}' does not exist")
    (tmp_path / "dir.json").mkdir()
    result = cli("compare", missing, missing, option, tmp_path / "dir.json", "-q")
    one_line_error(result, 1, f"{option} '{tmp_path / 'dir.json'}' is a directory")
    path = write("in.csv", "predicted,ground_truth,label,score\nParis,Paris,1,1\n")
    result = cli("compare", path, path, option, path, "-q")
    one_line_error(result, 2, f"{option} '{path}' is the input file")
    result = cli("calibrate", path, "--label", "label", option, path, "-q")
    one_line_error(result, 2, f"{option} '{path}' is the input file")
    assert (tmp_path / "in.csv").read_text(
        encoding="utf-8"
    ) == "predicted,ground_truth,label,score\nParis,Paris,1,1\n"
