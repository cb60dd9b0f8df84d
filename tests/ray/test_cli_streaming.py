"""``simkernel score --engine ray`` streaming on the real two-node loopback cluster: the rows are checked as
the driver reads them for the workers (a bad row still names its line and leaves nothing), a run killed
with SIGKILL resumes to the local engine's bytes, and a folder or glob of files is read by Ray Data on the
nodes, in sorted file order, to the local engine's output of the files concatenated."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.cli.scale_data import distinct_rows, write_csv, write_jsonl

from simkernel.tables.partial import partial_dir

CHUNK = 40


def argv(*args: object) -> list[str]:
    return [sys.executable, "-m", "simkernel", "score", *map(str, args)]


def score(*args: object, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv(*args), capture_output=True, env=env, timeout=600, check=False)


def ray_args(cluster, workers: int = 2) -> list[object]:
    return ["--engine", "ray", "--address", cluster.address, "--workers", workers]


def figures(path: Path) -> dict:
    summary = json.loads(path.read_text(encoding="utf-8"))
    return {k: summary[k] for k in ("rows", "mean_score", "labelled_rows", "pearson", "spearman")}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ray-streaming")


def test_a_bad_row_late_in_the_file_names_its_lines_and_nothing_is_written(ray_cluster, folder):
    rows = distinct_rows(160)
    rows[130]["predicted"] = " "  # line 132 (the header is line 1), in the 4th chunk of 40
    rows[150]["label"] = "high"  # line 152
    source, out = write_csv(rows, folder / "bad.csv"), folder / "bad-out.csv"
    result = score(
        source,
        "-o",
        out,
        "--chunk-rows",
        CHUNK,
        "--label",
        "label",
        *ray_args(ray_cluster),
        env=ray_cluster.env(),
    )
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert f"{source} line 132: column 'predicted' is empty" in err
    assert "(and 1 more bad row: line 152)" in err
    assert not out.exists() and not partial_dir(out).exists()  # the chunks before it are not kept either


def test_jsonl_to_jsonl_streams_to_the_local_engines_bytes(ray_cluster, folder):
    rows = distinct_rows(130)  # Russian and Chinese rows among them (scale_data.OTHER_LANGUAGES)
    for i, row in enumerate(rows):
        if i % 7 == 0:
            row["ground_truth"] = [row["ground_truth"], f"another answer {i}"]  # several ground truths
        if i % 11 == 0:
            row[f"only_in_row_{i}"] = {"nested": [i, None]}  # a key few rows have, kept as it is
    source = write_jsonl(rows, folder / "rows.jsonl")
    common = ["--chunk-rows", CHUNK, "--label", "label", "-q"]
    local = score(source, "-o", folder / "local.jsonl", "--summary-json", folder / "local.json", *common)
    assert local.returncode == 0, local.stderr.decode()
    out, summary = folder / "ray.jsonl", folder / "ray.json"
    result = score(
        source, "-o", out, "--summary-json", summary, *common, *ray_args(ray_cluster), env=ray_cluster.env()
    )
    assert result.returncode == 0, result.stderr.decode()
    assert out.read_bytes() == (folder / "local.jsonl").read_bytes()
    assert figures(summary) == figures(folder / "local.json")
    notes = json.loads(summary.read_text(encoding="utf-8"))["notes"]
    assert any(n.startswith("Ray: 10 blocks of up to 17 rows") for n in notes), notes  # 130 rows, 2 workers


def test_a_jsonl_row_late_with_the_score_column_leaves_nothing(ray_cluster, folder):
    rows = distinct_rows(120)
    rows[100]["score"] = 0.9  # in the 3rd chunk: the column the output would overwrite
    source = write_jsonl(rows, folder / "clash.jsonl")
    out = folder / "clash-out.jsonl"
    result = score(source, "-o", out, "--chunk-rows", CHUNK, *ray_args(ray_cluster), env=ray_cluster.env())
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert f"{source} already has a column 'score', which the output would overwrite" in err
    assert not out.exists() and not partial_dir(out).exists()


def kill_once_committed(command: list[str], env: dict, out: Path, rows: int) -> int | None:
    """Run ``command``; SIGKILL it once ``rows`` rows of ``out`` are committed; the rows then (None: it
    ended first)."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at = None
    deadline = time.monotonic() + 400
    while process.poll() is None and time.monotonic() < deadline:
        try:
            done = json.loads((partial_dir(out) / "state.json").read_text(encoding="utf-8"))["rows"]
        except (OSError, ValueError, KeyError):
            done = 0
        if done >= rows:
            process.send_signal(signal.SIGKILL)
            killed_at = done
            break
        time.sleep(0.005)
    process.communicate(timeout=120)
    return killed_at


def resume_and_compare(
    common: list, out: Path, local: Path, cluster, killed_at: int | None, total: int
) -> None:
    assert killed_at is not None and killed_at < total, "the run ended before it could be killed"
    assert not out.exists()
    summary = out.with_suffix(".json")
    resumed = score(
        *common, "-o", out, "--resume", "--summary-json", summary, *ray_args(cluster), env=cluster.env()
    )
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert out.read_bytes() == local.read_bytes()
    assert figures(summary) == figures(local.with_suffix(".json"))  # the resumed rows' labels count too
    notes = json.loads(summary.read_text(encoding="utf-8"))["notes"]
    assert any(n.startswith(f"resumed: {killed_at} rows came from the interrupted run") for n in notes)


def test_a_killed_run_resumes_to_the_local_engines_output(ray_cluster, folder):
    source = write_csv(distinct_rows(400), folder / "resume.csv")
    common = [source, "--chunk-rows", CHUNK, "--label", "label", "-q"]
    local = folder / "resume-local.csv"
    result = score(*common, "-o", local, "--summary-json", local.with_suffix(".json"))
    assert result.returncode == 0, result.stderr.decode()
    out = folder / "resume-ray.csv"
    command = argv(*common, "-o", out, *ray_args(ray_cluster))
    killed_at = kill_once_committed(command, ray_cluster.env(), out, CHUNK)
    resume_and_compare(common, out, local, ray_cluster, killed_at, 400)


def test_a_killed_file_set_run_resumes_to_the_local_engines_output(ray_cluster, folder):
    rows = distinct_rows(400)
    parts = folder / "resume-parts"
    parts.mkdir()
    for name, start, stop in (("a", 0, 100), ("b", 100, 200), ("c", 200, 400)):
        write_csv(rows[start:stop], parts / f"{name}.csv")
    whole = write_csv(rows, folder / "resume-whole.csv")
    local = folder / "resume-parts-local.csv"
    flags = ["--chunk-rows", CHUNK, "--label", "label", "-q"]
    result = score(whole, "-o", local, "--summary-json", local.with_suffix(".json"), *flags)
    assert result.returncode == 0, result.stderr.decode()
    out = folder / "resume-parts-ray.csv"
    command = argv(parts, *flags, "-o", out, *ray_args(ray_cluster))
    killed_at = kill_once_committed(command, ray_cluster.env(), out, 3 * CHUNK)  # file a wholly committed
    resume_and_compare([parts, *flags], out, local, ray_cluster, killed_at, 400)


def test_a_folder_of_csv_files_is_read_on_the_nodes_in_sorted_order(ray_cluster, folder):
    rows = distinct_rows(150)
    parts = folder / "parts"
    parts.mkdir()
    # written out of order and unevenly; sorted: part-a (rows 0-69), part-b (70-79), part-c (80-149)
    write_csv(rows[80:], parts / "part-c.csv")
    write_csv(rows[:70], parts / "part-a.csv")
    write_csv(rows[70:80], parts / "part-b.csv")
    (parts / "_SUCCESS").write_text("")  # not a table: left out
    whole = write_csv(rows, folder / "whole.csv")
    common = ["--chunk-rows", CHUNK, "--label", "label", "-q"]
    local = score(whole, "-o", folder / "whole-out.csv", "--summary-json", folder / "whole.json", *common)
    assert local.returncode == 0, local.stderr.decode()
    out, summary = folder / "parts-out.csv", folder / "parts.json"
    result = score(
        parts, "-o", out, "--summary-json", summary, *common, *ray_args(ray_cluster), env=ray_cluster.env()
    )
    assert result.returncode == 0, result.stderr.decode()
    assert out.read_bytes() == (folder / "whole-out.csv").read_bytes()
    assert figures(summary) == figures(folder / "whole.json")
    notes = json.loads(summary.read_text(encoding="utf-8"))["notes"]
    assert any(n.startswith("Ray Data: 3 csv files read on the nodes") for n in notes)


def test_a_glob_of_parquet_files_gives_the_local_engines_parquet(ray_cluster, folder):
    rows = distinct_rows(90)
    for i, row in enumerate(rows):
        row["ground_truth"] = [row["ground_truth"], f"another answer {i}"][: 1 + (i % 5 == 0)]
    table = pa.Table.from_pylist(rows)
    shards = folder / "shards"
    shards.mkdir()
    for name, start, stop in (("s2", 50, 90), ("s0", 0, 20), ("s1", 20, 50)):
        pq.write_table(table.slice(start, stop - start), shards / f"{name}.parquet")
    pq.write_table(table, folder / "all.parquet")
    local = score(folder / "all.parquet", "-o", folder / "all-out.parquet", "--chunk-rows", 25, "-q")
    assert local.returncode == 0, local.stderr.decode()
    out = folder / "shards-out.parquet"
    result = score(
        f"{shards}/*.parquet",
        "-o",
        out,
        "--chunk-rows",
        25,
        "-q",
        *ray_args(ray_cluster, 1),
        env=ray_cluster.env(),
    )
    assert result.returncode == 0, result.stderr.decode()
    assert out.read_bytes() == (folder / "all-out.parquet").read_bytes()


def test_a_bad_row_in_a_file_set_names_the_file_and_row_and_nothing_is_written(ray_cluster, folder):
    rows = distinct_rows(60)
    rows[45]["ground_truth"] = ""  # the 16th data row of the second file
    bad = folder / "bad-parts"
    bad.mkdir()
    write_csv(rows[:30], bad / "1.csv")
    write_csv(rows[30:], bad / "2.csv")
    out = folder / "bad-parts-out.csv"
    result = score(bad, "-o", out, "--chunk-rows", 10, *ray_args(ray_cluster), env=ray_cluster.env())
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert f"{bad / '2.csv'} row 16: column 'ground_truth' is empty" in err
    assert not out.exists() and not partial_dir(out).exists()


def test_a_bad_row_in_a_file_set_written_to_stdout_says_what_was_printed(ray_cluster, folder):
    rows = distinct_rows(60)
    rows[55]["ground_truth"] = ""  # the 26th data row of the second file
    bad = folder / "bad-parts-stdout"
    bad.mkdir()
    write_csv(rows[:30], bad / "1.csv")
    write_csv(rows[30:], bad / "2.csv")
    result = score(bad, "--chunk-rows", 10, *ray_args(ray_cluster), env=ray_cluster.env())
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert f"{bad / '2.csv'} row 26: column 'ground_truth' is empty" in err
    printed = result.stdout.decode().splitlines()[1:]  # after the header (when anything was printed)
    if printed:  # the nodes check as they score: rows of the blocks before the bad one may be out already
        assert (
            f"; {len(printed)} rows were already printed to stdout before it: that output is incomplete"
            in err
        )
    else:
        assert "already printed" not in err
