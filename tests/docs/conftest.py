"""Fixtures of the documentation tests: a working folder that looks like the repository's root (the examples
use the files it ships, examples/ and tests/data/, and write their outputs beside them), and the server
that the server page's own command starts."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.docs.pages import REPO, shell_blocks


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh folder with the repository's examples/ and tests/ linked in, made the current folder."""
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    # the Spark page's rule: Spark's Python workers run this venv's Python (PYSPARK_PYTHON)
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    yield tmp_path
    _stop_engines()


def _stop_engines() -> None:
    """Stop the Spark session and the local Ray an example started in this process, so that no other test
    finds them running."""
    if "pyspark.sql" in sys.modules:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        if session is not None:
            session.stop()
    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            ray.shutdown()


def shell_env() -> dict[str, str]:
    """The environment of a shell example: this venv's `simkernel` and `python` first on PATH, no proxy."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def serve_command() -> list[str]:
    """The `simkernel serve ...` line of the block marked server="start" (the server page's own command)."""
    starts = [b for b in shell_blocks() if b.settings.get("server") == "start"]
    assert starts, 'no shell block is marked server="start"'
    line = next(x for x in starts[0].source.splitlines() if x.startswith("simkernel serve"))
    return shlex.split(line)[2:]


@pytest.fixture(scope="session")
def docs_server() -> Iterator[object]:
    """`simkernel serve` started with the page's options on a free loopback port; stopped afterwards."""
    from tests.serve.serve_support import ServerProcess

    server = ServerProcess(*serve_command())
    try:
        yield server
    finally:
        server.stop()
