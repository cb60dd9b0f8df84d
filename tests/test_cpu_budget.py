"""simkernel.cpu_budget: the CPUs a process may use, from its affinity mask and its cgroup CPU quota.

Fake cgroup trees (v2 and v1 files, /proc/self/cgroup and /proc/self/mountinfo) under a temporary root
check the parsing; a child process with a one-CPU affinity mask, and, when the tests run as root with a
writable cpu controller, a child in a real cgroup with a one-CPU quota check that the kernel's thread
count, the encoder's batch workers and onnxruntime's intra-op threads all follow the figure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from simkernel import cpu_budget
from simkernel.cpu_budget import available_cpus, cgroup_cpu_limit
from simkernel.cpu_budget import cpu_budget as budget

REPO = Path(__file__).resolve().parents[1]


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def v2_tree(root: Path, cgroup: str, limits: dict[str, str], mount_root: str = "/") -> Path:
    """A cgroup v2 tree: ``limits`` maps a cgroup path to its cpu.max line."""
    write(root, "proc/self/cgroup", f"0::{cgroup}\n")
    write(
        root,
        "proc/self/mountinfo",
        "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
        f"30 22 0:26 {mount_root} /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
    )
    base = root / "sys/fs/cgroup"
    write(root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
    (base / cgroup.strip("/")).mkdir(parents=True, exist_ok=True)
    for path, line in limits.items():
        write(base, f"{path.strip('/')}/cpu.max".lstrip("/"), line + "\n")
    return root


def v1_tree(
    root: Path, cgroup: str, limits: dict[str, tuple[int, int]], mount_root: str = "/", mountinfo=True
) -> Path:
    """A cgroup v1 tree with the cpu,cpuacct hierarchy: ``limits`` maps a path to (quota, period)."""
    write(root, "proc/self/cgroup", f"12:memory:/other\n4:cpu,cpuacct:{cgroup}\n1:name=systemd:{cgroup}\n")
    if mountinfo:
        write(
            root,
            "proc/self/mountinfo",
            "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
            "31 22 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
            f"33 31 0:30 {mount_root} /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
            "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
        )
    base = root / "sys/fs/cgroup/cpu,cpuacct"
    base.mkdir(parents=True, exist_ok=True)
    for path, (quota, period) in limits.items():
        folder = base / path.strip("/")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "cpu.cfs_quota_us").write_text(f"{quota}\n")
        (folder / "cpu.cfs_period_us").write_text(f"{period}\n")
    return root


# -- fake trees ---------------------------------------------------------------------------------------
def test_v2_quota_of_the_process_cgroup(tmp_path):
    root = v2_tree(tmp_path, "/kubepods/pod1/c1", {"/kubepods/pod1/c1": "200000 100000"})
    assert cgroup_cpu_limit(root) == 2.0
    assert budget(root, affinity=64) == 2


def test_v2_smallest_quota_along_the_ancestors_rounded_up(tmp_path):
    limits = {
        "/kubepods": "max 100000",
        "/kubepods/pod1": "150000 100000",
        "/kubepods/pod1/c1": "400000 100000",
    }
    root = v2_tree(tmp_path, "/kubepods/pod1/c1", limits)
    assert cgroup_cpu_limit(root) == 1.5
    assert budget(root, affinity=64) == 2  # 1.5 CPUs of quota may keep 2 threads busy part of the time


def test_v2_max_means_no_limit_and_affinity_decides(tmp_path):
    root = v2_tree(tmp_path, "/user.slice", {"/user.slice": "max 100000"})
    assert cgroup_cpu_limit(root) is None
    assert budget(root, affinity=6) == 6


def test_affinity_below_the_quota_wins(tmp_path):
    root = v2_tree(tmp_path, "/c", {"/c": "800000 100000"})
    assert budget(root, affinity=3) == 3


def test_quota_below_one_cpu_gives_one(tmp_path):
    root = v2_tree(tmp_path, "/c", {"/c": "20000 100000"})
    assert cgroup_cpu_limit(root) == pytest.approx(0.2)
    assert budget(root, affinity=64) == 1


def test_v2_namespaced_container_reads_the_mount_root(tmp_path):
    # inside a container with a cgroup namespace, /proc/self/cgroup says "0::/" and the quota of the
    # container's own cgroup sits at the mount point
    root = v2_tree(tmp_path, "/", {"/": "300000 100000"})
    assert budget(root, affinity=64) == 3


def test_v2_path_hidden_by_the_mount_falls_back_to_the_mount_point(tmp_path):
    # the host path is not visible inside the container's mount: read the mount point's own files
    root = v2_tree(tmp_path, "/", {"/": "100000 100000"})
    write(root, "proc/self/cgroup", "0::/system.slice/docker-abc.scope\n")
    assert budget(root, affinity=64) == 1


def test_v1_cfs_quota_and_period(tmp_path):
    root = v1_tree(tmp_path, "/docker/abc", {"/docker/abc": (250000, 100000), "/docker": (-1, 100000)})
    assert cgroup_cpu_limit(root) == 2.5
    assert budget(root, affinity=64) == 3


def test_v1_mount_root_is_stripped(tmp_path):
    # the hierarchy is mounted from /docker/abc: the process's path lies at the mount point itself
    root = v1_tree(tmp_path, "/docker/abc", {"/": (100000, 50000)}, mount_root="/docker/abc")
    assert budget(root, affinity=64) == 2


def test_v1_without_mountinfo_uses_the_usual_place(tmp_path):
    root = v1_tree(tmp_path, "/", {"/": (300000, 100000)}, mountinfo=False)
    assert budget(root, affinity=64) == 3


def test_v1_unlimited_is_minus_one(tmp_path):
    root = v1_tree(tmp_path, "/", {"/": (-1, 100000)})
    assert cgroup_cpu_limit(root) is None
    assert budget(root, affinity=5) == 5


@pytest.mark.parametrize(
    "line", ["", "garbage", "abc 100000", "100000 0", "-5 100000", "100000 x", "\x00\xff"]
)
def test_malformed_cpu_max_counts_as_no_limit(tmp_path, line):
    root = v2_tree(tmp_path, "/c", {"/c": line})
    assert cgroup_cpu_limit(root) is None
    assert budget(root, affinity=4) == 4


def test_no_cgroup_files_at_all(tmp_path):
    assert cgroup_cpu_limit(tmp_path) is None
    assert budget(tmp_path, affinity=7) == 7


def test_both_hierarchies_the_smaller_counts(tmp_path):
    root = v2_tree(tmp_path, "/a", {"/a": "400000 100000"})
    v1 = v1_tree(tmp_path / "v1", "/b", {"/b": (100000, 100000)})
    write(root, "proc/self/cgroup", "4:cpu,cpuacct:/b\n0::/a\n")
    mountinfo = (root / "proc/self/mountinfo").read_text()
    point = (v1 / "sys/fs/cgroup/cpu,cpuacct").relative_to(root)
    mountinfo += f"33 31 0:30 / /{point} rw - cgroup cgroup rw,cpu\n"
    write(root, "proc/self/mountinfo", mountinfo)
    assert budget(root, affinity=64) == 1


# -- this process and its children --------------------------------------------------------------------
def test_this_process_figure_is_cached_and_bounded_by_affinity():
    assert 1 <= available_cpus() <= cpu_budget.affinity_cpus()
    assert available_cpus() == budget()


CHILD = textwrap.dedent(
    """
    import json, os, sys
    cgroup_procs = sys.argv[1]
    if cgroup_procs:
        with open(cgroup_procs, "w") as handle:
            handle.write(str(os.getpid()))
    if len(sys.argv) > 2:
        os.sched_setaffinity(0, {int(sys.argv[2])})
    from simkernel import kernels
    from simkernel.cpu_budget import available_cpus
    from simkernel.runtime.store import bundles as store
    from simkernel.runtime.inference.session import OnnxEncoderSession, TOKEN_EMBEDDING_OUTPUTS
    import onnxruntime  # its import starts a thread of its own; count the session's threads only
    before = len(os.listdir("/proc/self/task"))
    onnx = store.model_dir("sentence-transformers/all-MiniLM-L6-v2") / "model.onnx"
    session = OnnxEncoderSession(onnx, TOKEN_EMBEDDING_OUTPUTS)
    threads = len(os.listdir("/proc/self/task")) - before
    print(json.dumps({"cpus": available_cpus(), "kernel": kernels.get_num_threads(),
                      "workers": session.workers, "ort_threads": threads}))
    """
)


def run_child(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("SIMKERNEL_NUM_THREADS", None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_threads_follow_the_affinity_mask(default_model_bundle):
    wide = run_child("")
    one = run_child("", str(sorted(os.sched_getaffinity(0))[0]))
    assert one == {"cpus": 1, "kernel": 1, "workers": 1, "ort_threads": 0}
    # without the mask: as many as the process may use (onnxruntime's pool: one thread per CPU but the
    # caller's)
    cpus = budget()
    assert wide == {"cpus": cpus, "kernel": min(cpus, 8), "workers": min(cpus, 8), "ort_threads": cpus - 1}


def _writable_cpu_cgroup() -> Path | None:
    """A fresh child cgroup with a writable CPU quota, under this process's own cgroup (root only)."""
    if os.geteuid() != 0:
        return None
    v2_path, v1_path = cpu_budget._cgroup_paths(Path("/"))
    v2_mount, v1_mount = cpu_budget._mounts(Path("/"))
    name = f"simkernel-test-{uuid.uuid4().hex[:8]}"
    if v1_mount is not None and v1_path is not None:
        folder = cpu_budget._folders(v1_mount, v1_path)[0] / name
        try:
            folder.mkdir()
            (folder / "cpu.cfs_period_us").write_text("100000")
            (folder / "cpu.cfs_quota_us").write_text("100000")
            return folder
        except OSError:
            if folder.exists():
                folder.rmdir()
    if v2_mount is not None and v2_path is not None:
        parent = cpu_budget._folders(v2_mount, v2_path)[0]
        folder = parent / name
        try:
            if "cpu" not in (parent / "cgroup.subtree_control").read_text().split():
                return None
            folder.mkdir()
            (folder / "cpu.max").write_text("100000 100000")
            return folder
        except OSError:
            if folder.exists():
                folder.rmdir()
    return None


@pytest.fixture
def one_cpu_cgroup():
    folder = _writable_cpu_cgroup()
    if folder is None:
        pytest.skip("needs root and a writable cgroup cpu controller (v1 cpu.cfs_quota_us or v2 cpu.max)")
    try:
        yield folder
    finally:
        # the child has exited; an empty cgroup can be removed
        folder.rmdir()


@pytest.fixture(scope="session")
def default_model_bundle() -> Path:
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir("sentence-transformers/all-MiniLM-L6-v2")
    if not (folder / "model.onnx").is_file():
        pytest.fail(f"the default model is not in the store ({folder}); run `make models` first")
    return folder


def test_threads_follow_a_real_cgroup_quota(one_cpu_cgroup, default_model_bundle):
    inside = run_child(str(one_cpu_cgroup / "cgroup.procs"))
    assert inside == {"cpus": 1, "kernel": 1, "workers": 1, "ort_threads": 0}
