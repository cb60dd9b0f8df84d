"""Fixtures shared by every test module: the reference data and fixtures the repo ships in tests/data.

tests/data/sas holds the 5,025 human-labelled SAS pairs and tests/data/fixtures the reference scores written
by the real Haystack and eval_lib (tests/data/README.md names their sources and licences).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def haystack_fixture() -> dict:
    return json.loads((DATA / "fixtures" / "haystack_sas_minilm.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def eval_lib_fixture() -> dict:
    return json.loads(
        (DATA / "fixtures" / "eval_lib_reference_match_minilm.json").read_text(encoding="utf-8")
    )
