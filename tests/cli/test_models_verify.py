"""``simkernel models verify``: every file of each bundle re-hashed against its manifest; one line per
bundle; exit status 1 on any mismatch or missing model."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from simkernel.runtime.store.manifest import MANIFEST, STAMP


def linked_bundle(src: Path, dst: Path, writable: tuple[str, ...] = ()) -> Path:
    for path in src.rglob("*"):
        if path.is_file() and path.name != STAMP:
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            name = path.relative_to(src).as_posix()
            (shutil.copy2 if name in (*writable, MANIFEST) else os.link)(path, target)
    return dst


@pytest.fixture
def store(tmp_path, monkeypatch, minilm):
    from simkernel.runtime.store import bundles as store_module

    source = store_module.model_dir(minilm)
    home = tmp_path / "store"
    monkeypatch.setenv("SIMKERNEL_HOME", str(home))
    good = linked_bundle(source, home / "models" / "org--good")
    bad = linked_bundle(source, home / "models" / "org--bad", writable=("tokenizer.json",))
    with open(bad / "tokenizer.json", "r+b") as handle:
        handle.seek(1000)
        handle.write(b"#" * 64)  # same size, other bytes
    return {"good": good, "bad": bad, "source": source}


def test_a_good_bundle_by_id_and_by_folder(cli, store):
    result = cli("models", "verify", "org/good", str(store["good"]))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert len(lines) == 2 and all(line.startswith("OK ") for line in lines)
    assert "every checksum matches" in lines[0]


def test_a_corrupt_file_fails_with_both_checksums_and_exit_1(cli, store):
    result = cli("models", "verify", "org/good", "org/bad")
    assert result.code == 1
    good, bad = result.out.splitlines()
    assert good.startswith("OK ") and bad.startswith("FAILED ")
    assert "tokenizer.json does not match its checksum" in bad and "expected sha256" in bad and "found" in bad
    assert "simkernel models prepare" in bad


def test_all_checks_every_bundle_in_the_store(cli, store):
    result = cli("models", "verify", "--all")
    assert result.code == 1
    assert [line.split()[0] for line in result.out.splitlines()] == ["FAILED", "OK"]  # org/bad, org/good


def test_a_model_not_in_the_store_fails(cli, store):
    result = cli("models", "verify", "org/missing")
    assert result.code == 1 and result.out.startswith("FAILED     org/missing: not in the store")


def test_ids_and_all_together_is_a_usage_error(cli, store):
    result = cli("models", "verify", "org/good", "--all")
    assert result.code == 2 and "not both" in result.err
