"""The venvs of the tools that cannot share the development venv (scripts/tool_venv.sh NAME builds them;
`make test` builds them first): where they are, and a check script run in one as a child process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def python(name: str) -> Path:
    """The tool venv's interpreter; a missing venv is a failure naming the command that builds it."""
    # a relative SIMKERNEL_TOOL_VENVS (the Makefile exports ".tool-venvs") is the repository's: the checks run
    # in a temporary working folder, where a relative interpreter path would not resolve
    root = REPO / os.environ.get("SIMKERNEL_TOOL_VENVS", ".tool-venvs")
    interpreter = root / name / "bin" / "python"
    if not interpreter.is_file():
        pytest.fail(
            f"the {name} venv is missing ({interpreter}); build it with `bash scripts/tool_venv.sh {name}` (`make test` does)"
        )
    return interpreter


def run_checks(
    name: str, script: str, *args: str, cwd: Path, env: dict | None = None, timeout: float = 600
) -> dict:
    """Run tests/integrations/SCRIPT in the NAME venv, in ``cwd`` (a tool may write its settings there), on
    the test session's model store, with ``env`` added (it may override the hub's offline mode: a client of a
    loopback server needs it off); its JSON output."""
    from simkernel.runtime.store import bundles as store

    env = {**os.environ, "SIMKERNEL_HOME": str(store.store_root()), "HF_HUB_OFFLINE": "1", **(env or {})}
    # the venv's own packages, and this checkout's src/ first: the venv's .pth names the checkout that built
    # it, which a second checkout (a git worktree) sharing the venv is not
    env["PYTHONPATH"] = str(REPO / "src")
    run = subprocess.run(
        [str(python(name)), str(HERE / script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )
    if run.returncode != 0:
        pytest.fail(
            f"{script} failed in the {name} venv (exit {run.returncode}):\n{run.stdout[-4000:]}\n{run.stderr[-8000:]}"
        )
    return json.loads(run.stdout.strip().splitlines()[-1])
