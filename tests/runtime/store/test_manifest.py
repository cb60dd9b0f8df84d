"""Bundle integrity: every file checked against its manifest checksum at the first load after a change,
a stamp (size, mtime, inode) that lets later loads skip the hashing, and a clear ModelError for a
corrupt file (the issue's case: 5 KB of model.onnx_data overwritten, which used to give embeddings at
cosine 0.007 from the true ones and scores without a warning).

The bundles here are copies of the default model's bundle (hard links, except the file a test damages,
which is copied first) outside the store, under a temporary store (SIMKERNEL_HOME).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from simkernel.errors import ModelError
from simkernel.runtime.inference.text_encoder import BundleTextEncoder
from simkernel.runtime.store import manifest as manifest_module
from simkernel.runtime.store.manifest import MANIFEST, STAMP, check_bundle, stamp_path

TEXTS = ["Berlin is the capital of Germany.", "Лев Толстой", "北京"]


@pytest.fixture(scope="module")
def original(default_bundle) -> Path:
    return default_bundle


@pytest.fixture
def store_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "store"
    monkeypatch.setenv("SIMKERNEL_HOME", str(home))
    return home


def linked_copy(src: Path, dst: Path, writable: tuple[str, ...] = ()) -> Path:
    """``src`` re-created at ``dst`` with hard links (cheap), except ``writable`` files, real copies."""
    for path in src.rglob("*"):
        if path.is_dir() or path.name == STAMP:
            continue
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        name = path.relative_to(src).as_posix()
        if name in writable or name == MANIFEST:
            shutil.copy2(path, target)
        else:
            os.link(path, target)
    return dst


@pytest.fixture
def hashes(monkeypatch) -> list[str]:
    """The names of the files hashed while the test runs."""
    seen: list[str] = []
    real = manifest_module.file_sha256

    def counting(path, *args, **kwargs):
        seen.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(manifest_module, "file_sha256", counting)
    return seen


def overwrite_5kb(path: Path, keep_mtime: bool = False) -> None:
    before = os.stat(path)
    with open(path, "r+b") as handle:
        handle.seek(before.st_size // 2)
        handle.write(np.random.default_rng(14).bytes(5 * 1024))
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_first_load_hashes_every_file_later_loads_only_stat(original, store_home, tmp_path, hashes):
    folder = linked_copy(original, tmp_path / "bundle")
    listed = json.loads((folder / MANIFEST).read_text())["files"]
    first = BundleTextEncoder(folder, threads=1).encode(TEXTS)
    assert sorted(hashes) == sorted(Path(name).name for name in listed)  # every file, once
    where = stamp_path(folder)
    assert where.parent == store_home / "verified" and where.is_file()  # outside the store: in its cache
    assert json.loads(where.read_text())["path"] == os.path.realpath(folder)
    hashes.clear()
    again = BundleTextEncoder(folder, threads=1).encode(TEXTS)
    assert hashes == []  # nothing changed: the stamp vouches
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, BundleTextEncoder(original, threads=1).encode(TEXTS))


def test_5kb_overwritten_in_the_weights_is_a_model_error_naming_file_checksums_and_fix(
    original, store_home, tmp_path
):
    folder = linked_copy(original, tmp_path / "bundle", writable=("model.onnx_data",))
    BundleTextEncoder(folder, threads=1)  # verified and stamped while intact
    expected = json.loads((folder / MANIFEST).read_text())["files"]["model.onnx_data"]["sha256"]
    overwrite_5kb(folder / "model.onnx_data")
    found = manifest_module.file_sha256(folder / "model.onnx_data")
    with pytest.raises(ModelError) as info:
        BundleTextEncoder(folder, threads=1)
    message = str(info.value)
    assert str(folder / "model.onnx_data") in message
    assert f"expected sha256 {expected[:16]}..." in message and f"found {found[:16]}..." in message
    assert "simkernel models prepare" in message and f"delete the folder {folder}" in message
    assert not stamp_path(folder).exists()  # a failed check leaves no stamp behind
    with pytest.raises(ModelError, match="does not match its checksum"):  # and fails every time
        BundleTextEncoder(folder, threads=1)


def test_a_store_bundle_keeps_its_stamp_beside_the_manifest(original, store_home, hashes):
    folder = linked_copy(original, store_home / "models" / "org--copy")
    BundleTextEncoder(folder, threads=1)
    assert stamp_path(folder) == folder / STAMP and (folder / STAMP).is_file()
    hashes.clear()
    BundleTextEncoder(folder, threads=1)
    assert hashes == []


def test_a_changed_manifest_or_a_replaced_file_is_hashed_again(original, store_home, tmp_path, hashes):
    folder = linked_copy(original, tmp_path / "bundle", writable=("tokenizer.json",))
    assert check_bundle(folder) is True
    assert check_bundle(folder) is False
    (folder / MANIFEST).write_text((folder / MANIFEST).read_text())  # rewritten: new mtime
    assert check_bundle(folder) is True
    shutil.copy(folder / "tokenizer.json", tmp_path / "t.json")
    os.replace(tmp_path / "t.json", folder / "tokenizer.json")  # same bytes, another inode
    hashes.clear()
    assert check_bundle(folder) is True and "tokenizer.json" in hashes


def test_an_unwritable_stamp_place_only_means_hashing_each_time(original, tmp_path, monkeypatch, hashes):
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "not-a-folder"))  # nothing can be created under it
    folder = linked_copy(original, tmp_path / "bundle")
    assert check_bundle(folder) is True
    assert check_bundle(folder) is True  # no stamp could be kept: verified again, never trusted blindly


def test_damage_that_keeps_size_mtime_and_inode_needs_models_verify(original, store_home, tmp_path):
    """The stamp trusts size, mtime and inode (as make and rsync do); damage that restores the mtime is
    what `simkernel models verify` is for: it always hashes."""
    from simkernel.cli import main

    folder = linked_copy(original, tmp_path / "bundle", writable=("model.onnx_data",))
    assert check_bundle(folder) is True
    overwrite_5kb(folder / "model.onnx_data", keep_mtime=True)
    assert check_bundle(folder) is False
    assert main(["models", "verify", str(folder)]) == 1
    assert not stamp_path(folder).exists()
    with pytest.raises(ModelError, match="model.onnx_data does not match its checksum"):
        check_bundle(folder)
