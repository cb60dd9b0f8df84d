"""The model store: where it lives, id mapping, atomic verified installs, concurrent installers."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest
from tests.runtime.store.store_helpers import install_bundle

from simkernel.errors import ModelError
from simkernel.runtime.store import bundles as store


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _bundle(folder: Path, payload: bytes = b"onnx-bytes", manifest: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.onnx").write_bytes(payload)
    if manifest:
        (folder / "simkernel.json").write_text(
            json.dumps(
                {
                    "id": "org/model",
                    "files": {
                        "model.onnx": {
                            "bytes": len(payload),
                            "sha256": store.file_sha256(folder / "model.onnx"),
                        }
                    },
                }
            )
        )
    return folder


def test_store_root_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv("SIMKERNEL_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert store.store_root() == tmp_path / "xdg" / "simkernel"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert store.store_root() == tmp_path / "user" / ".cache" / "simkernel"
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "explicit"))
    assert store.store_root() == tmp_path / "explicit"


@pytest.mark.parametrize("bad", ["", "a/b/c", "../x", "org/..", "a--b/c", "org/", "C:\\x", "a\\b"])
def test_invalid_ids_are_rejected(home, bad):
    with pytest.raises(ModelError, match="not a valid model id"):
        store.model_dir(bad)


def test_model_dir_mapping(home):
    assert store.model_dir("sentence-transformers/all-MiniLM-L6-v2") == (
        home / "models" / "sentence-transformers--all-MiniLM-L6-v2"
    )
    assert store.model_dir("gpt2") == home / "models" / "gpt2"


def test_install_list_replace(home, tmp_path):
    src = _bundle(tmp_path / "src")
    dest = install_bundle(src, "org/model")
    assert dest == store.model_dir("org/model") and (dest / "model.onnx").read_bytes() == b"onnx-bytes"
    assert (src / "model.onnx").exists()  # the source is left untouched
    assert store.is_installed("org/model")
    _bundle(src, b"new-bytes")
    install_bundle(src, "org/model", replace=False)
    assert (dest / "model.onnx").read_bytes() == b"onnx-bytes"
    install_bundle(src, "org/model")
    assert (dest / "model.onnx").read_bytes() == b"new-bytes"
    [listed] = store.list_models()
    assert listed.id == "org/model" and listed.onnx_files == ("model.onnx",) and listed.bytes > 0
    assert not list((home / "tmp").iterdir())  # no staging or old copies left behind


def test_incomplete_bundles_are_never_published(home, tmp_path):
    src = _bundle(tmp_path / "src")
    (src / "model.onnx").write_bytes(b"truncated")  # manifest says 10 bytes
    with pytest.raises(ModelError, match="truncated or corrupt"):
        install_bundle(src, "org/model")
    (src / "model.onnx").write_bytes(b"onnx-bytez")  # right size, wrong content
    with pytest.raises(ModelError, match="does not match its checksum"):
        install_bundle(src, "org/model")
    (src / "model.onnx").unlink()
    with pytest.raises(ModelError):
        install_bundle(src, "org/model")
    assert not store.model_dir("org/model").exists()
    assert store.list_models() == []


def test_staged_bundle_publishes_only_on_success(home):
    with pytest.raises(RuntimeError):
        with store.staged_bundle("org/model") as folder:
            _bundle(folder, manifest=False)
            raise RuntimeError("export crashed")
    assert not store.model_dir("org/model").exists()
    with store.staged_bundle("org/model") as folder:
        _bundle(folder, manifest=False)
    assert store.is_installed("org/model")


def _install_many(args):
    home, src, payload = args
    import os

    os.environ["SIMKERNEL_HOME"] = home
    from simkernel.runtime.store import bundles as s

    for _ in range(5):
        install_bundle(_bundle(Path(src), payload), "org/model")
        folder = s.model_dir("org/model")
        data = (folder / "model.onnx").read_bytes()
        assert data in (b"A" * 100_000, b"B" * 100_000), len(data)
    return True


def test_concurrent_installers_never_interleave(home, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    jobs = [
        (str(home), str(tmp_path / f"src{i}"), payload)
        for i, payload in enumerate([b"A" * 100_000, b"B" * 100_000])
    ]
    with ctx.Pool(2) as pool:
        assert pool.map(_install_many, jobs) == [True, True]
    folder = store.model_dir("org/model")
    store.verify_bundle(folder)  # manifest and model.onnx come from the same installer
    assert (folder / "model.onnx").read_bytes() in (b"A" * 100_000, b"B" * 100_000)


def test_lock_times_out_with_a_clear_error(home):
    with store.model_lock("org/model"):
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            message = pool.apply(_try_lock_briefly, (str(home),))
    assert f"process {os.getpid()} (running) is installing 'org/model'" in message  # the holder, named


def _try_lock_briefly(home):
    import os

    os.environ["SIMKERNEL_HOME"] = home
    from simkernel.runtime.store import bundles as s

    try:
        with s.model_lock("org/model", timeout_s=0.3):
            return "acquired"
    except Exception as exc:
        return str(exc)
