"""How many CPUs this process may really use: the CPU affinity mask and the cgroup CPU quota.

``os.cpu_count()`` (and onnxruntime's default, one thread per core) counts the CPUs of the host. In a
container limited to 2 CPUs on a 64-core host by a CFS quota (what Kubernetes' ``resources.limits.cpu``
sets) a pool sized from that starts 64 threads that spin against a budget of 2 and stall. simkernel sizes
every default thread count from :func:`available_cpus` instead:

- the affinity mask (``os.sched_getaffinity(0)``: ``taskset``, cpusets, Docker's ``--cpuset-cpus``);
- the cgroup CPU quota of the process's cgroup and of each of its ancestors, the smallest one (cgroup v2
  ``cpu.max`` = ``"$MAX $PERIOD"``, ``"max"`` meaning none; cgroup v1 ``cpu.cfs_quota_us`` /
  ``cpu.cfs_period_us``, ``-1`` meaning none), rounded up to whole CPUs (a quota of 1.5 CPUs gives 2);

the smaller of the two, at least 1. The files are found through ``/proc/self/cgroup`` and
``/proc/self/mountinfo`` (a container that hides its cgroup path sees its own cgroup at the mount root);
every unreadable or malformed file counts as "no limit". ``root`` lets tests point all of it at a fake
tree. The figure is read once per process and cached (:func:`available_cpus`); a fork re-reads it.
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path

_cached: tuple[int, int] | None = None  # (pid, figure)
_lock = threading.Lock()


def affinity_cpus() -> int:
    """CPUs in this process's affinity mask (``os.cpu_count()`` where there is no mask); at least 1."""
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None


def _cgroup_paths(root: Path) -> tuple[str | None, str | None]:
    """(v2 path, v1 cpu-controller path) of this process from ``/proc/self/cgroup``."""
    v2 = v1 = None
    text = _read(root / "proc/self/cgroup") or ""
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2 = path
        elif "cpu" in controllers.split(","):
            v1 = path
    return v2, v1


def _mounts(root: Path) -> tuple[tuple[Path, str] | None, tuple[Path, str] | None]:
    """((mount point, mount root) of cgroup2, same of the v1 hierarchy holding ``cpu``), from mountinfo.

    Without a readable mountinfo the usual places are assumed: ``/sys/fs/cgroup`` for v2 (when it holds
    ``cgroup.controllers``), ``/sys/fs/cgroup/cpu,cpuacct`` or ``/sys/fs/cgroup/cpu`` for v1.
    """
    v2 = v1 = None
    text = _read(root / "proc/self/mountinfo")
    for line in (text or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        point = root / fields[4].lstrip("/")
        if tail[0] == "cgroup2" and v2 is None:
            v2 = (point, fields[3])
        elif tail[0] == "cgroup" and "cpu" in tail[2].split(",") and v1 is None:
            v1 = (point, fields[3])
    if text is None:
        base = root / "sys/fs/cgroup"
        if (base / "cgroup.controllers").is_file():
            v2 = (base, "/")
        for name in ("cpu,cpuacct", "cpu"):
            if (base / name / "cpu.cfs_quota_us").is_file():
                v1 = (base / name, "/")
                break
    return v2, v1


def _folders(mount: tuple[Path, str], cgroup_path: str) -> list[Path]:
    """The process's cgroup folder under ``mount`` and its ancestors up to the mount point."""
    point, mount_root = mount
    relative = cgroup_path
    if mount_root != "/" and (relative + "/").startswith(mount_root.rstrip("/") + "/"):
        relative = relative[len(mount_root.rstrip("/")) :]
    parts = [p for p in relative.split("/") if p and p not in (".", "..")]
    folder = point.joinpath(*parts) if parts else point
    if not folder.is_dir():  # a namespaced container sees its own cgroup at the mount point
        folder = point
    chain = [folder]
    while folder != point and point in folder.parents:
        folder = folder.parent
        chain.append(folder)
    return chain


def _v2_limit(folder: Path) -> float | None:
    fields = (_read(folder / "cpu.max") or "").split()
    if len(fields) < 1 or fields[0] == "max":
        return None
    try:
        quota = float(fields[0])
        period = float(fields[1]) if len(fields) > 1 else 100000.0
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _v1_limit(folder: Path) -> float | None:
    try:
        quota = float(_read(folder / "cpu.cfs_quota_us") or "-1")
        period = float(_read(folder / "cpu.cfs_period_us") or "0")
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def cgroup_cpu_limit(root: str | os.PathLike = "/") -> float | None:
    """The CPU quota of this process's cgroups in CPUs (e.g. 1.5), the smallest along its ancestors and
    over v2 and v1; None when no quota applies (or no cgroup file could be read)."""
    root = Path(root)
    v2_path, v1_path = _cgroup_paths(root)
    v2_mount, v1_mount = _mounts(root)
    limits: list[float] = []
    if v2_path is not None and v2_mount is not None:
        limits += [x for f in _folders(v2_mount, v2_path) if (x := _v2_limit(f)) is not None]
    if v1_path is not None and v1_mount is not None:
        limits += [x for f in _folders(v1_mount, v1_path) if (x := _v1_limit(f)) is not None]
    return min(limits) if limits else None


def cpu_budget(root: str | os.PathLike = "/", affinity: int | None = None) -> int:
    """The CPUs this process may use: min(affinity mask, cgroup quota rounded up), at least 1 (not cached).

    ``affinity`` replaces the process's affinity count (tests)."""
    cpus = affinity_cpus() if affinity is None else max(1, int(affinity))
    limit = cgroup_cpu_limit(root)
    if limit is not None:
        cpus = min(cpus, max(1, math.ceil(limit - 1e-9)))
    return max(1, cpus)


def available_cpus() -> int:
    """:func:`cpu_budget` of this process, read once per process (and again after a fork)."""
    global _cached
    pid = os.getpid()
    cached = _cached
    if cached is not None and cached[0] == pid:
        return cached[1]
    with _lock:
        if _cached is None or _cached[0] != pid:
            _cached = (pid, cpu_budget())
        return _cached[1]
