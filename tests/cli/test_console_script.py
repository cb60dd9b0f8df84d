"""The installed ``simkernel`` console script and ``python -m simkernel`` in real subprocesses: exit codes,
pipes, the progress bar on a terminal only, and the issue's SQuAD example run offline."""

from __future__ import annotations

import csv
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from tests.cli.conftest import EXAMPLES, REPO

SCRIPT = Path(sys.executable).with_name("simkernel")


@pytest.fixture(scope="module")
def script() -> str:
    if not SCRIPT.is_file():
        pytest.fail(
            f"the console script {SCRIPT} is missing: install the package (pip install -e .) "
            f"into {sys.prefix}"
        )
    return str(SCRIPT)


def run(argv, *, stdin=None, env=None, cwd=REPO, timeout=600):
    return subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )


def test_version_help_and_module_entry_point(script):
    from simkernel import __version__

    assert run([script, "--version"]).stdout.decode().strip() == f"simkernel {__version__}"
    help_text = run([sys.executable, "-m", "simkernel", "score", "--help"]).stdout.decode()
    for option in (
        "--mode {sas,reference,exact,bertscore}",
        "--metric-option NAME=VALUE",
        "--ground-truth",
        "--predicted",
        "--references",
        "--label",
        "--model",
        "--precision",
        "--aggregation",
        "--threshold",
        "--batch-size",
        "--output",
        "--quiet",
    ):
        assert option in help_text


def test_exit_codes_and_one_line_errors(script, tmp_path):
    unknown_mode = run([script, "score", str(EXAMPLES / "answers.csv"), "--mode", "bleu"])
    assert unknown_mode.returncode == 2
    assert len(unknown_mode.stderr.decode().strip().splitlines()) == 1
    missing = run([script, "score", str(tmp_path / "none.csv")])
    assert missing.returncode == 1
    assert missing.stderr.decode().strip().splitlines() == [
        f"simkernel: error: input file {str(tmp_path / 'none.csv')!r} does not exist; "
        "check the path (use - to read stdin)"
    ]
    assert missing.stdout == b""


def test_pipe_in_and_out(script):
    data = "ground_truth,predicted\nЛев Толстой,Лев Толстой\n北京,上海\n".encode()
    result = run([script, "score", "-", "--mode", "exact"], stdin=data)
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.decode("utf-8")
        == "ground_truth,predicted,score\nЛев Толстой,Лев Толстой,1\n北京,上海,0\n"
    )
    assert b"2 rows" in result.stderr


def test_closed_stdout_stops_quietly(script, tmp_path):
    """`simkernel score big.csv | head`: the reader goes away; the command stops without a word (no
    traceback, no "error: BrokenPipeError"), exit status 1, as Python's own tools do."""
    big = tmp_path / "big.csv"
    big.write_text("ground_truth,predicted\n" + "a,a\n" * 200_000, encoding="utf-8")
    pipeline = subprocess.run(
        [
            "bash",
            "-c",
            f"{script} score {big} --mode exact --chunk-rows 1000 -q | head -n 1; exit ${{PIPESTATUS[0]}}",
        ],
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert pipeline.stdout == b"ground_truth,predicted,score\n"
    assert pipeline.stderr == b""
    assert pipeline.returncode == 1


def test_the_issues_squad_example_offline(script, tmp_path, data_dir, minilm):
    """`simkernel score tests/data/sas/SQuAD_SAS.csv --ground-truth answer1 --predicted answer2
    --label label --output scored.csv`, run from the repo root with the hub unreachable; scores equal the
    real Haystack SASEvaluator's (stored by scripts/haystack_reference_scores.sh) within 1e-5."""
    out = tmp_path / "scored.csv"
    result = run(
        [
            script,
            "score",
            "tests/data/sas/SQuAD_SAS.csv",
            "--ground-truth",
            "answer1",
            "--predicted",
            "answer2",
            "--label",
            "label",
            "--output",
            str(out),
        ],
        env={"HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr.decode()
    with open(out, newline="", encoding="utf-8") as fh:
        scored = list(csv.DictReader(fh))
    assert len(scored) == 942 and list(scored[0]) == ["answer1", "answer2", "label", "score"]
    haystack = json.loads(
        (REPO / "tests" / "data" / "fixtures" / "haystack_sas_all_minilm.json").read_text(encoding="utf-8")
    )
    squad = next(d for d in haystack["datasets"] if d["name"] == "SQuAD")
    scores = np.array([float(r["score"]) for r in scored])
    np.testing.assert_allclose(scores, squad["scores"], atol=1e-5)
    labels = np.array([float(r["label"]) for r in scored])
    r, rho = scipy.stats.pearsonr(scores, labels).statistic, scipy.stats.spearmanr(scores, labels).statistic
    err = result.stderr.decode()
    assert f"Pearson {r:.4f}, Spearman {rho:.4f} (942 of 942 rows labelled)" in err
    # the figures tests/data/sas/README.md gives for Haystack with this model
    assert round(r, 3) == 0.688 and round(rho, 3) == 0.674


def _run_on_a_terminal(argv, env):
    """Run ``argv`` with stderr on a pseudo-terminal; returns (exit status, what it wrote to stderr)."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=terminal, cwd=REPO, env={**os.environ, **env}
    )
    os.close(terminal)
    chunks = []
    while True:
        ready, _, _ = select.select([controller], [], [], 600)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(controller, 65536)
        except OSError:  # EIO once the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    os.close(controller)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def test_progress_bar_only_on_a_terminal_and_not_when_quiet(script, minilm):
    argv = [script, "score", str(EXAMPLES / "answers.csv"), "--batch-size", "8"]
    env = {"SIMKERNEL_PROGRESS_DELAY": "0"}
    code, err = _run_on_a_terminal(argv, env)
    assert code == 0, err
    assert "scoring [" in err and "45/45 rows" in err and "\r" in err
    assert "simkernel score: 45 rows" in err  # the summary follows the bar

    code, err = _run_on_a_terminal([*argv, "--quiet"], env)
    assert code == 0 and err == ""

    piped = run(argv, env=env)  # stderr is a pipe, not a terminal
    assert piped.returncode == 0
    assert b"scoring [" not in piped.stderr and b"\r" not in piped.stderr
    assert b"simkernel score: 45 rows" in piped.stderr


def test_a_model_that_cannot_be_found_is_one_line_exit_1(script, tmp_path):
    result = run(
        [script, "score", str(EXAMPLES / "answers.csv"), "--model", "acme/no-such-model"],
        env={"HF_HUB_OFFLINE": "1", "SIMKERNEL_HOME": str(tmp_path / "empty-store")},
    )
    assert result.returncode == 1
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("simkernel: error: ")
    assert "acme/no-such-model" in lines[0]
    assert result.stdout == b""
