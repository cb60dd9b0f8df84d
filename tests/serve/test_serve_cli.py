"""The ``simkernel serve`` command itself: the extra imported by it only, a missing extra named with its
install command, unusable settings refused in one line, the key from the environment."""

from __future__ import annotations

import subprocess
import sys

import httpx
from serve_support import DEFAULT_MODEL, ServerProcess, loopback_env


def run_python(code: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env or loopback_env(), timeout=120
    )


def test_the_serve_extra_is_imported_by_the_command_only():
    code = (
        "import sys, simkernel, simkernel.cli, simkernel.cli.parser, simkernel.serve\n"
        "simkernel.cli.parser.build_parser().parse_args(['serve', '--model', 'm'])\n"
        "print(sorted(m for m in ('starlette', 'uvicorn', 'prometheus_client') if m in sys.modules))"
    )
    run = run_python(code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_a_missing_extra_names_the_install_command():
    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "from simkernel.cli import main\n"
        f"sys.exit(main(['serve', '--model', {DEFAULT_MODEL!r}]))"
    )
    run = run_python(code)
    assert run.returncode == 1, run.stderr
    assert "pip install 'simkernel[serve]'" in run.stderr
    assert run.stderr.count("\n") == 1  # one line, no traceback


def test_unusable_settings_are_one_line_errors(tmp_path):
    for args, named in (
        (["--drain-timeout", "0"], "--drain-timeout"),
        (["--api-key-file", str(tmp_path / "missing")], "missing"),
        (["--port", "-1"], "negative"),
    ):
        run = run_python(
            f"import sys; from simkernel.cli import main; sys.exit(main({['serve', '--model', DEFAULT_MODEL, *args]!r}))"
        )
        assert run.returncode in (1, 2), run.stderr
        assert named in run.stderr and "Traceback" not in run.stderr, run.stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    run = run_python(
        f"import sys; from simkernel.cli import main; sys.exit(main(['serve', '--model', 'x', '--api-key-file', {str(empty)!r}]))"
    )
    assert run.returncode == 1 and "empty" in run.stderr


def test_the_key_can_come_from_the_environment():
    process = ServerProcess("--model", DEFAULT_MODEL, env=loopback_env(SIMKERNEL_API_KEY="from-the-env"))
    try:
        with httpx.Client(base_url=process.url, trust_env=False) as http:
            body = {"model": DEFAULT_MODEL, "input": "x"}
            assert http.post("/v1/embeddings", json=body).status_code == 401
            ok = http.post("/v1/embeddings", json=body, headers={"Authorization": "Bearer from-the-env"})
            assert ok.status_code == 200
    finally:
        status, stderr = process.stop()
    assert status == 0 and "from-the-env" not in stderr
    assert process.banner.startswith("simkernel serve: listening on http://127.0.0.1:")
