"""Run a command on one CPU under a memory limit, and measure its peak memory: the edge profile's check
(tests/cli/test_edge_profile.py) and figures (benchmarks/bench_edge.py). Linux only.

Two ways to limit memory, the first that works here:

- ``cgroup``: a child memory cgroup of this process's own (cgroup v2: ``memory.max`` and
  ``memory.swap.max``; v1: ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``), the way a
  container or a systemd unit limits a service: resident pages and the page cache the process fills count,
  swap does not help, and going over it gets the process OOM-killed (SIGKILL). Needs a writable cgroup
  tree (root, or a delegated subtree).
- ``rlimit_as``: ``RLIMIT_AS``, the address space the process may map (virtual memory: reserved but
  untouched memory counts too, so it is stricter than the same figure in a cgroup); an allocation past it
  fails (MemoryError, or std::bad_alloc in onnxruntime).

The command runs pinned to one CPU (``sched_setaffinity``, as ``taskset -c CPU`` does) in both cases; its
peak RSS is the kernel's high-water mark of its resident set after ``exec`` (``VmHWM`` in
``/proc/PID/status``, read every 10 ms until it exits: ``wait4``'s ``ru_maxrss`` would count the forking
parent's resident set too).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
METHODS = ("cgroup", "rlimit_as")


@dataclass
class LimitedRun:
    """What a command run under a limit did."""

    method: str  # "cgroup (v1)", "cgroup (v2)" or "rlimit_as"
    returncode: int  # negative: killed by that signal (-9: the cgroup's OOM killer)
    stdout: str
    stderr: str
    wall_s: float
    peak_rss_bytes: int  # the process's own peak resident set (VmHWM, read until it exits)
    peak_vm_bytes: int  # its peak virtual size (VmPeak): what RLIMIT_AS limits
    cgroup_peak_bytes: int | None  # the cgroup's peak charge (RSS + page cache), cgroup runs only
    oom_killed: bool  # the cgroup's OOM killer fired (cgroup runs only)


def _own_cgroup(controller: str | None) -> str:
    """This process's cgroup path for ``controller`` (v1) or the unified one (``None``: v2)."""
    for line in Path("/proc/self/cgroup").read_text(encoding="ascii").splitlines():
        _, names, path = line.split(":", 2)
        if (controller is None and names == "") or (
            controller is not None and controller in names.split(",")
        ):
            return path.lstrip("/")
    raise OSError(f"no {controller or 'unified'} cgroup in /proc/self/cgroup")


def cgroup_base() -> tuple[str, Path] | str:
    """``(version, folder)`` where a memory cgroup can be made, or why none can."""
    if (CGROUP_ROOT / "cgroup.controllers").is_file():  # v2 (unified)
        try:
            own = CGROUP_ROOT / _own_cgroup(None)
        except OSError as exc:
            return str(exc)
        # a v2 cgroup with processes in it cannot give its children controllers: use its parent's subtree
        for base in (own, own.parent, CGROUP_ROOT):
            control = base / "cgroup.subtree_control"
            if control.is_file() and "memory" in control.read_text(encoding="ascii").split():
                if os.access(base, os.W_OK):
                    return "v2", base
        return "cgroup v2 without a writable folder whose subtree_control enables memory (needs root or delegation)"
    memory = CGROUP_ROOT / "memory"
    if (memory / "memory.limit_in_bytes").is_file():  # v1
        try:
            own = memory / _own_cgroup("memory")
        except OSError as exc:
            return str(exc)
        for base in (own, memory):
            if os.access(base, os.W_OK):
                return "v1", base
        return f"cgroup v1 memory controller at {memory} is not writable (needs root)"
    return f"no cgroup memory controller under {CGROUP_ROOT}"


@contextlib.contextmanager
def _memory_cgroup(limit_bytes: int) -> Iterator[tuple[str, Path]]:
    found = cgroup_base()
    if isinstance(found, str):
        raise OSError(found)
    version, base = found
    group = base / f"simkernel-limit-{os.getpid()}-{time.monotonic_ns()}"
    group.mkdir()
    try:
        if version == "v2":
            (group / "memory.max").write_text(str(limit_bytes), encoding="ascii")
            with contextlib.suppress(OSError):  # no swap accounting: nothing to switch off
                (group / "memory.swap.max").write_text("0", encoding="ascii")
        else:
            (group / "memory.limit_in_bytes").write_text(str(limit_bytes), encoding="ascii")
            with contextlib.suppress(OSError):  # swap accounting off in this kernel
                (group / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes), encoding="ascii")
        yield version, group
    finally:
        for _ in range(50):  # the killed process may take a moment to leave the group
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def _cgroup_peak(version: str, group: Path) -> int | None:
    name = "memory.peak" if version == "v2" else "memory.max_usage_in_bytes"
    try:
        return int((group / name).read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _oom_killed(version: str, group: Path) -> bool:
    name = "memory.events" if version == "v2" else "memory.oom_control"
    try:
        fields = dict(line.split() for line in (group / name).read_text(encoding="ascii").splitlines())
    except (OSError, ValueError):
        return False
    return int(fields.get("oom_kill", "0")) > 0


def run_limited(
    command: Sequence[str],
    limit_bytes: int,
    *,
    method: str = "cgroup",
    cpu: int | None = None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout_s: float = 300.0,
    work: Path,
) -> LimitedRun:
    """Run ``command`` on one CPU (``cpu``, default the first this process may use) under ``limit_bytes``
    of memory by ``method`` (:data:`METHODS`); its output goes through files in ``work``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    cpu = min(os.sched_getaffinity(0)) if cpu is None else cpu
    with contextlib.ExitStack() as stack:
        group: tuple[str, Path] | None = None
        if method == "cgroup":
            group = stack.enter_context(_memory_cgroup(limit_bytes))
        procs = group[1] / "cgroup.procs" if group else None

        def enter_limits() -> None:  # in the child, before exec
            os.sched_setaffinity(0, {cpu})
            if procs is not None:
                procs.write_text(str(os.getpid()), encoding="ascii")
            else:
                resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

        out_path, err_path = (
            work / f"limited-{time.monotonic_ns()}.out",
            work / f"limited-{time.monotonic_ns()}.err",
        )
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.perf_counter()
            proc = subprocess.Popen(
                list(command), stdout=out, stderr=err, env=env, cwd=cwd, preexec_fn=enter_limits
            )
            deadline = start + timeout_s
            high_water = virtual = 0
            while True:
                rss, vm = _peaks(proc.pid)
                high_water, virtual = max(high_water, rss), max(virtual, vm)
                pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.perf_counter() > deadline:
                    proc.send_signal(signal.SIGKILL)
                    _, status, _ = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.01)
            wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        peak = _cgroup_peak(*group) if group else None
        oom = _oom_killed(*group) if group else False
        label = f"cgroup ({group[0]})" if group else "rlimit_as"
    return LimitedRun(
        method=label,
        returncode=proc.returncode,
        stdout=out_path.read_text(encoding="utf-8", errors="replace"),
        stderr=err_path.read_text(encoding="utf-8", errors="replace"),
        wall_s=wall,
        peak_rss_bytes=high_water,
        peak_vm_bytes=virtual,
        cgroup_peak_bytes=peak,
        oom_killed=oom,
    )


def _peaks(pid: int) -> tuple[int, int]:
    """(peak resident set, peak virtual size) of ``pid`` in bytes; zeros once it is gone."""
    found = {"VmHWM:": 0, "VmPeak:": 0}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                key = line.split(maxsplit=1)[0] if line.strip() else ""
                if key in found:
                    found[key] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found["VmHWM:"], found["VmPeak:"]
