"""A metric added in one module (:mod:`tests.scoring.length_ratio_metric`, declared as an entry point) is
scored by ``simkernel score --engine ray`` with no other change: the Ray workers find it in the registry
by name. Ray here is the single-node instance the command starts itself (its workers inherit the
command's environment, where the plugin is installed), bound to the loopback interface."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tests.ray.cluster import LOOPBACK_ENV, SLOW_MACHINE_ENV
from tests.scoring.plugin import plugin_path, write_plugin
from tests.scoring.test_metric_plugin import ROWS, expected, read_scores, write_rows


def test_a_plugin_metric_scores_on_the_ray_engine(tmp_path):
    import os

    folder = write_plugin(tmp_path / "site")
    env = {
        **os.environ,
        **LOOPBACK_ENV,
        **SLOW_MACHINE_ENV,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": plugin_path(folder),
        "RAY_ADDRESS": "local",  # a new instance of this command's own, never a cluster running here
    }
    rows = ROWS * 10
    source, out = write_rows(tmp_path / "in.csv", rows), tmp_path / "out.csv"
    argv = [source, "--mode", "length_ratio", "-o", str(out), "--engine", "ray", "--workers", "1"]
    run = subprocess.run(
        [sys.executable, "-m", "simkernel", "score", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert read_scores(out) == pytest.approx(expected(rows), abs=1e-15)
    assert "mode length_ratio, Ray on this machine: 1 worker x 1 CPU" in run.stderr


def test_a_multi_column_metric_keeps_every_column_on_the_ray_engine(tmp_path):
    """Both Ray paths: a file streamed to the workers in row blocks, and a folder of files read on the
    nodes (Ray Data); each column against the lengths counted here, the output equal to the local one."""
    import os

    from tests.scoring.plugin import PAIR_ENTRY
    from tests.scoring.test_multi_column_metric import check_csv

    folder = write_plugin(tmp_path / "site", PAIR_ENTRY)
    env = {
        **os.environ,
        **LOOPBACK_ENV,
        **SLOW_MACHINE_ENV,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": plugin_path(folder),
        "RAY_ADDRESS": "local",
    }
    rows = ROWS * 10
    parts = tmp_path / "parts"
    parts.mkdir()
    source = write_rows(parts / "a.csv", rows[:25])
    write_rows(parts / "b.csv", rows[25:])
    whole = write_rows(tmp_path / "whole.csv", rows)

    def score(*argv: str) -> None:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "simkernel",
                "score",
                *argv,
                "--mode",
                "length_pair",
                "--threshold",
                "0.5",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr

    score(whole, "-o", str(tmp_path / "local.csv"))
    score(source, "-o", str(tmp_path / "blocks.csv"), "--engine", "ray", "--workers", "1")
    score(str(parts), "-o", str(tmp_path / "files.csv"), "--engine", "ray", "--workers", "1")
    check_csv(tmp_path / "blocks.csv", rows[:25])
    check_csv(tmp_path / "files.csv", rows)
    assert (tmp_path / "files.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
