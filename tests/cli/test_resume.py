"""``simkernel score`` killed with SIGKILL at random points (seeded), then ``--resume``: OUT is never
half-written (it keeps its old content until the run completes), and the final OUT is byte for byte the
output of an uninterrupted run, with the same summary over every row."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.cli.scale_data import distinct_rows, write_csv, write_parquet

from simkernel.tables.partial import partial_dir

N = 240
CHUNK = 12
OLD = b"the previous output, which must survive every kill\n"


def start(source: Path, out: Path, summary: Path, resume: bool) -> subprocess.Popen:
    argv = [sys.executable, "-m", "simkernel", "score", str(source), "-o", str(out), "--label", "label"]
    argv += ["--chunk-rows", str(CHUNK), "--threads", "1", "-q", "--summary-json", str(summary)]
    if resume:
        argv.append("--resume")
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def committed_rows(out: Path) -> int:
    try:
        return json.loads((partial_dir(out) / "state.json").read_text(encoding="utf-8"))["rows"]
    except (OSError, ValueError, KeyError):
        return -1


def kill_when(process: subprocess.Popen, out: Path, rows: int | None, delay: float | None) -> int:
    """SIGKILL ``process`` once ``rows`` rows are committed (or after ``delay`` seconds); returns the rows
    committed at the kill (-1: none yet), or None if it finished first."""
    started = time.monotonic()
    while process.poll() is None:
        done = committed_rows(out)
        if (rows is not None and done >= rows) or (delay is not None and time.monotonic() - started >= delay):
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
            return done
        if time.monotonic() - started > 300:
            process.kill()
            pytest.fail("the scoring run did not progress in 300 s")
        time.sleep(0.005)
    return None


def summary_without_timings(path: Path) -> dict:
    summary = json.loads(path.read_text(encoding="utf-8"))
    return {
        k: v for k, v in summary.items() if k not in ("elapsed_s", "load_s", "score_s", "rows_per_s", "notes")
    }


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_sigkill_at_random_points_then_resume_gives_the_uninterrupted_output(tmp_path, minilm, fmt):
    rows = distinct_rows(N)
    source = (
        write_csv(rows, tmp_path / "in.csv") if fmt == "csv" else write_parquet(rows, tmp_path / "in.parquet")
    )
    reference, reference_summary = tmp_path / f"reference.{fmt}", tmp_path / "reference.json"
    done = start(source, reference, reference_summary, resume=False)
    assert done.wait(timeout=600) == 0, done.stderr.read().decode()

    out, summary = tmp_path / f"out.{fmt}", tmp_path / "summary.json"
    out.write_bytes(OLD)
    rng = random.Random(20261201 if fmt == "csv" else 7)
    # one kill while the model loads (before any chunk), then kills at random numbers of committed rows
    plan: list[tuple[int | None, float | None]] = [(None, rng.uniform(0.3, 1.5))]
    plan += [(target, None) for target in sorted(rng.sample(range(CHUNK, N - CHUNK), 3))]
    killed_at = []
    for target, delay in plan:
        process = start(source, out, summary, resume=True)
        at = kill_when(process, out, target, delay)
        if at is None:  # finished before the kill point: nothing more to interrupt
            break
        killed_at.append(at)
        assert out.read_bytes() == OLD, f"OUT changed by a run killed at {at} rows"
        assert process.returncode == -signal.SIGKILL
    assert len(killed_at) >= 3, killed_at
    assert partial_dir(out).is_dir()

    final = start(source, out, summary, resume=True)
    assert final.wait(timeout=600) == 0, final.stderr.read().decode()
    assert out.read_bytes() == reference.read_bytes()
    assert not partial_dir(out).exists()
    assert summary_without_timings(summary) | {"output": ""} == summary_without_timings(reference_summary) | {
        "output": ""
    }
    notes = json.loads(summary.read_text(encoding="utf-8"))["notes"]
    resumed = [n for n in notes if n.startswith("resumed: ")]
    assert len(resumed) == 1 and int(resumed[0].split()[1]) == max(killed_at)


def test_ctrl_c_keeps_the_scored_rows_and_says_how_to_resume(tmp_path, minilm):
    # long enough (seconds on one thread) that the run is still going when this process, which may wait
    # for a CPU on a busy machine, sees the first chunk committed and sends Ctrl-C
    source = write_csv(distinct_rows(10 * N), tmp_path / "in.csv")
    out = tmp_path / "out.csv"
    argv = [
        sys.executable,
        "-m",
        "simkernel",
        "score",
        str(source),
        "-o",
        str(out),
        "--chunk-rows",
        str(CHUNK),
        "--threads",
        "1",
    ]
    # Ctrl-C's default disposition, as in a terminal: a test run started in the background (`cmd &` in a
    # script, as scripts/run_tests.sh starts its halves) inherits SIGINT ignored, and Python keeps it so
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 300
    while committed_rows(out) < CHUNK and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert process.poll() is None, "the run ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err.decode()[-2000:]
    message = err.decode().strip().splitlines()[-1]
    assert message.startswith(f"simkernel: error: interrupted; {out} was not touched; the ")
    assert message.endswith("rows scored so far are kept: rerun with --resume to continue")
    assert not out.exists() and committed_rows(out) >= CHUNK
    assert os.listdir(partial_dir(out))  # kept for --resume
