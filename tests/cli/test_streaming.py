"""``simkernel score`` on inputs read, scored and written in chunks: the output does not depend on the chunk
size, OUT is replaced only when complete, the summary covers every row, bad input keeps its contract
(named line, nothing written, nothing loaded), and the progress bar counts rows with an ETA."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from tests.cli.conftest import read_csv_rows
from tests.cli.scale_data import distinct_rows, write_csv, write_jsonl
from tests.runtime.runtime_helpers import cosine_rows

from simkernel.batch.progress import ProgressBar, eta
from simkernel.runtime import clear_shared_instances
from simkernel.tables.partial import partial_dir

N = 120  # rows: with --chunk-rows 50, three chunks, the last one short


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return distinct_rows(N)


@pytest.fixture
def data_csv(tmp_path, rows) -> Path:
    return write_csv(rows, tmp_path / "in.csv")


def summary_of(path: Path) -> dict:
    summary = json.loads(path.read_text(encoding="utf-8"))
    for timing in ("elapsed_s", "load_s", "score_s", "rows_per_s"):
        summary.pop(timing)
    return summary


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_output_does_not_depend_on_the_chunk_size(cli, tmp_path, rows, minilm, reference_embed, fmt):
    source = (
        write_csv(rows, tmp_path / "in.csv") if fmt == "csv" else write_jsonl(rows, tmp_path / "in.jsonl")
    )
    outputs, summaries = [], []
    for chunk_rows in (50, 7, 10_000):
        clear_shared_instances()  # a fresh model and embedding cache: every run embeds every text itself
        out, summary = tmp_path / f"out-{chunk_rows}.{fmt}", tmp_path / f"s-{chunk_rows}.json"
        result = cli(
            "score",
            source,
            "--label",
            "label",
            "--chunk-rows",
            chunk_rows,
            "-o",
            out,
            "--summary-json",
            summary,
        )
        assert result.code == 0, result.err
        outputs.append(out.read_bytes())
        summaries.append(summary_of(summary))
        assert not partial_dir(out).exists()  # the work folder is gone once OUT is complete
    assert outputs[0] == outputs[1] == outputs[2]
    for s in summaries[1:]:
        assert {k: v for k, v in s.items() if k != "output"} == {
            k: v for k, v in summaries[0].items() if k != "output"
        }

    # every row, in input order, scored as sentence-transformers scores it; the summary covers all rows
    if fmt == "csv":
        scored = read_csv_rows(tmp_path / "out-50.csv")
        assert [int(r["id"]) for r in scored] == list(range(N))
        scores = np.array([float(r["score"]) for r in scored])
    else:
        scored = [json.loads(line) for line in outputs[0].decode().splitlines()]
        assert [r["id"] for r in scored] == list(range(N))
        scores = np.array([r["score"] for r in scored])
    expected = cosine_rows(
        reference_embed([r["predicted"] for r in rows]), reference_embed([r["ground_truth"] for r in rows])
    )
    np.testing.assert_allclose(scores, expected, atol=1e-5)
    labelled = [i for i, r in enumerate(rows) if r["label"] is not None]
    labels = np.array([rows[i]["label"] for i in labelled], dtype=float)
    assert summaries[0]["rows"] == N and summaries[0]["labelled_rows"] == len(labelled)
    assert summaries[0]["mean_score"] == pytest.approx(scores.mean(), abs=1e-12)
    spearman = scipy.stats.spearmanr(scores[labelled], labels).statistic
    assert summaries[0]["spearman"] == pytest.approx(spearman, abs=1e-9)
    # the Russian and Chinese rows (one in 50) of every chunk are counted (the same count for any chunking)
    (note,) = [note for note in summaries[0]["notes"] if "row(s) hold non-Latin text" in note]
    assert int(note.split()[0]) >= sum(1 for i in range(N) if i % 50 == 49)


def test_a_bad_row_in_a_late_chunk_stops_before_the_model_loads(cli, tmp_path, rows, write):
    bad = [dict(r) for r in rows]
    bad[80]["predicted"] = ""
    bad[101]["label"] = "high"
    source = write_csv(bad, tmp_path / "bad.csv")
    out = tmp_path / "out.csv"
    out.write_text("old\n", encoding="utf-8")
    # the model does not exist: had it been loaded first, that would be the error
    result = cli(
        "score", source, "--label", "label", "--chunk-rows", 20, "-o", out, "--model", "acme/not-there"
    )
    assert result.code == 1
    assert result.err.startswith("simkernel: error: ") and len(result.err.strip().splitlines()) == 1
    assert "line 82: column 'predicted' is empty" in result.err  # header is line 1, row 0 is line 2
    assert "(and 1 more bad row: line 103)" in result.err
    assert out.read_text(encoding="utf-8") == "old\n"
    assert not partial_dir(out).exists()


def test_a_missing_jsonl_column_is_reported_before_the_model_loads(cli, tmp_path, rows):
    source = write_jsonl(
        [{k: v for k, v in r.items() if k != "ground_truth"} for r in rows], tmp_path / "a.jsonl"
    )
    result = cli("score", source, "--chunk-rows", 30, "--model", "acme/not-there", "-o", tmp_path / "o.jsonl")
    assert result.code == 1
    assert "has no column 'ground_truth' (columns found: id, predicted, label)" in result.err
    assert not (tmp_path / "o.jsonl").exists()


def test_a_failed_run_leaves_out_as_it_was(cli, tmp_path, data_csv):
    out = tmp_path / "out.csv"
    out.write_bytes(b"the old output\n")
    result = cli("score", data_csv, "-o", out, "--model", "acme/not-there", "--chunk-rows", 50)
    assert result.code == 1 and "acme/not-there" in result.err
    assert out.read_bytes() == b"the old output\n"
    assert not partial_dir(out).exists()  # nothing was scored, so nothing is kept for --resume


def test_a_leftover_partial_output_is_replaced_with_a_notice(cli, tmp_path, data_csv, minilm):
    out = tmp_path / "out.csv"
    leftover = partial_dir(out)
    leftover.mkdir()
    (leftover / "output.part").write_bytes(b"half a file")
    (leftover / "state.json").write_text('{"version": 1, "rows": 50}', encoding="utf-8")
    result = cli("score", data_csv, "-o", out, "--chunk-rows", 100)
    assert result.code == 0, result.err
    notes = [line for line in result.err.splitlines() if line.startswith("simkernel: note:")]
    assert len(notes) == 1 and "replacing the unfinished output" in notes[0] and "--resume" in notes[0]
    assert len(read_csv_rows(out)) == N and not leftover.exists()


def test_resume_refuses_another_input_or_other_options(cli, tmp_path, data_csv, minilm):
    out = tmp_path / "out.csv"
    folder = partial_dir(out)
    folder.mkdir()
    state = {
        "version": 1,
        "fingerprint": {"input": str(data_csv), "mode": "reference"},
        "rows": 0,
        "chunks": 0,
    }
    (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")
    result = cli("score", data_csv, "-o", out, "--resume")
    assert result.code == 2
    assert "--resume: the unfinished output" in result.err and "mode" in result.err
    assert "drop --resume to start over" in result.err
    assert not out.exists() and folder.exists()  # the earlier run's rows are not thrown away


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-", "--resume", "-o", "x.csv"], "--resume needs FILE to be a file"),
        (["IN", "--resume"], "--resume needs --output OUT"),
        (["IN", "--workers", "2"], "--address and --workers apply to --engine ray only"),
        (["IN", "--ray-in-flight", "2"], "--ray-in-flight applies to --engine ray only"),
        (["IN", "--engine", "ray", "--mode", "exact"], "--engine ray does not apply to --mode exact"),
        (["IN", "--chunk-rows", "0"], "0 is not a positive whole number"),
    ],
)
def test_usage_errors(cli, data_csv, argv, message):
    result = cli("score", *[str(data_csv) if a == "IN" else a for a in argv])
    assert result.code == 2 and message in result.err


def test_stdin_and_stdout_stream_in_chunks(cli, rows, data_csv, minilm, tmp_path):
    text = data_csv.read_text(encoding="utf-8")
    piped = cli("score", "-", "-q", "--chunk-rows", 40, stdin=text)
    assert piped.code == 0 and piped.err == ""
    whole = cli("score", data_csv, "-q", "-o", tmp_path / "o.csv")
    assert whole.code == 0
    assert piped.out.encode() == (tmp_path / "o.csv").read_bytes()
    assert [int(r["id"]) for r in csv.DictReader(io.StringIO(piped.out))] == list(range(N))


def test_reference_mode_counts_rows_without_references_over_every_chunk(cli, tmp_path, minilm):
    rows = [
        {"predicted": f"answer {i}", "references": json.dumps([] if i % 9 == 0 else [f"answer {i}", "other"])}
        for i in range(40)
    ]
    source = write_csv(rows, tmp_path / "refs.csv")
    result = cli("score", source, "--mode", "reference", "--chunk-rows", 8, "-o", tmp_path / "o.csv")
    assert result.code == 0, result.err
    assert "5 row(s) had no references and scored 0.0" in result.err
    scored = read_csv_rows(tmp_path / "o.csv")
    assert [float(r["score"]) for r in scored[::9]] == [0.0] * 5
    assert all(float(r["score"]) == pytest.approx(1.0, abs=1e-6) for i, r in enumerate(scored) if i % 9)


def test_progress_bar_shows_rows_rate_and_eta():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    with ProgressBar(1000, stream=stream, delay=0.0, interval=0.0, width=10, initial=400) as bar:
        bar.update(100)
        line = stream.getvalue()
    assert "500/1000 rows" in line and "rows/s" in line and "ETA" in line
    assert eta(0, 5.0) == "0 s" and eta(30, 1.0) == "30 s" and eta(600, 1.0) == "10 min"
    assert eta(36_000, 1.0) == "10.0 h" and eta(5, 0.0) == "?"


def test_output_file_permissions_follow_the_umask(cli, tmp_path, data_csv, minilm):
    out = tmp_path / "out.csv"
    assert cli("score", data_csv, "-q", "-o", out, "--chunk-rows", 100).code == 0
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask
