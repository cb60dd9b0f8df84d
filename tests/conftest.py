"""Fixtures shared by every test module: where ../shared lives and the reference checkpoints.

Tests read ../shared (fixtures, SAS data) beside the clone, as CI lays it out; a missing folder is a
loud failure, never a skip.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: tests need ../shared beside the clone (fixtures and data)")
    return SHARED


@pytest.fixture(scope="session")
def haystack_fixture(shared_dir: Path) -> dict:
    return json.loads((shared_dir / "fixtures" / "haystack_sas_minilm.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def eval_lib_fixture(shared_dir: Path) -> dict:
    return json.loads(
        (shared_dir / "fixtures" / "eval_lib_reference_match_minilm.json").read_text(encoding="utf-8")
    )
