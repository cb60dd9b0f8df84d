"""A real two-node Ray cluster on the loopback interface, started with ``ray start`` and stopped by
killing exactly its own processes (nothing else on the machine that runs Ray is touched).

Node 1 is the head (``--num-cpus 1``, the test machine's model store); node 2 joins it (``--num-cpus 1``)
with its own empty ``SIMKERNEL_HOME``, so a model reaches it only by shipping. Every Ray process of the
cluster gets ``--temp-dir`` set to a fresh folder; :meth:`LoopbackCluster.stop` kills every process whose
command line names that folder, and all their descendants (Ray's workers), then checks that none is left.

Loopback only: Ray binds its servers to the node's IP address, and ``ray start`` replaces 127.0.0.1 by the
machine's outward address unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which a worker node refuses
(it then declares multi-node clusters unsupported). The head and the drivers get that variable; the
second node is started through :data:`WORKER_NODE_START`, ``ray start`` with the localhost rewrite
turned off in that process only.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

OBJECT_STORE_BYTES = 200 * 1024 * 1024  # the largest file of a bundle (86 MB) must fit
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
# a shared 2-core machine starts Ray's agents and workers slowly: wait for them longer than Ray's defaults
SLOW_MACHINE_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # a loopback cluster of one test: no token (a token left in ~/.ray by another Ray would be required)
    "RAY_AUTH_MODE": "disabled",
    "RAY_agent_register_timeout_ms": "180000",
    "RAY_raylet_start_wait_time_s": "180",
    "RAY_worker_register_timeout_seconds": "180",
}
WORKER_NODE_START = (
    "import sys\n"
    "import ray._private.services as services\n"
    "services.resolve_ip_for_localhost = lambda host: host  # keep 127.0.0.1 (see tests/ray/cluster.py)\n"
    "from ray.scripts.scripts import main\n"
    "sys.argv[0] = 'ray'\n"
    "sys.exit(main())\n"
)


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 right now."""
    sockets, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process (from /proc)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = (
                Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        out[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmdline)
    return out


def processes_of(tag: str) -> set[int]:
    """The processes whose command line holds ``tag``, and all their descendants (this one excluded)."""
    table = _processes()
    found = {pid for pid, (_, cmd) in table.items() if tag in cmd and pid != os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, (parent, _) in table.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return {pid for pid in found if not _is_zombie(pid)}


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@dataclass
class LoopbackCluster:
    root: Path
    port: int = 0
    worker_home: Path = field(default_factory=Path)
    head_home: Path = field(default_factory=Path)
    nodes: int = 2  # 1: the head alone
    started: list[subprocess.CompletedProcess] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def temp_dir(self) -> Path:
        return self.root / "ray"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a driver of this cluster (a CLI run or a test connecting to it)."""
        return {**os.environ, **LOOPBACK_ENV, **SLOW_MACHINE_ENV, "HF_HUB_OFFLINE": "1", **extra}

    def start(self, head_home: Path, attempts: int = 4) -> None:
        """Start both nodes; a node whose start fails is killed and started again, up to ``attempts``
        times. (A raylet gives its dashboard agent 15 s to report its port and aborts otherwise; on a
        loaded 2-core machine the agent's imports alone can take longer. The imports are warmed first.)"""
        self.head_home = head_home
        self.worker_home = self.root / "worker-store"
        self.worker_home.mkdir()
        subprocess.run(
            [sys.executable, "-c", "import ray.dashboard.agent, ray._private.runtime_env.agent.main"],
            capture_output=True,
            timeout=300,
            check=False,
        )
        for attempt in range(1, attempts + 1):
            try:
                self._start_nodes()
                return
            except (RuntimeError, subprocess.TimeoutExpired):
                self.stop()
                if attempt == attempts:
                    raise

    def _start_nodes(self) -> None:
        ports = free_ports(14)
        self.port = ports[0]
        common = [
            "--num-cpus",
            "1",
            "--object-store-memory",
            str(OBJECT_STORE_BYTES),
            "--disable-usage-stats",
        ]
        head = [
            sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--node-ip-address", "127.0.0.1",
            "--port", str(self.port), "--temp-dir", str(self.temp_dir), "--include-dashboard", "false",
            "--dashboard-port", str(ports[1]), "--dashboard-agent-listen-port", str(ports[2]),
            "--dashboard-agent-grpc-port", str(ports[3]), "--runtime-env-agent-port", str(ports[4]),
            "--metrics-export-port", str(ports[5]), "--min-worker-port", str(ports[6]),
            "--max-worker-port", str(ports[6] + 60), *common,
        ]  # fmt: skip
        worker = [
            sys.executable, "-c", WORKER_NODE_START, "start", "--address", self.address,
            "--node-ip-address", "127.0.0.1", "--dashboard-agent-listen-port", str(ports[7]),
            "--dashboard-agent-grpc-port", str(ports[8]), "--runtime-env-agent-port", str(ports[9]),
            "--metrics-export-port", str(ports[10]), "--min-worker-port", str(ports[11]),
            "--max-worker-port", str(ports[11] + 60), *common,
        ]  # fmt: skip
        self._run(head, self.env(SIMKERNEL_HOME=str(self.head_home)))
        if self.nodes == 1:
            self._wait_for_nodes(1)
            return
        worker_env = {
            k: v for k, v in self.env(SIMKERNEL_HOME=str(self.worker_home)).items() if k not in LOOPBACK_ENV
        }
        self._run(worker, worker_env)
        self._wait_for_nodes(2)

    def _run(self, argv: list[str], env: dict[str, str]) -> None:
        # ray start returns once its daemons run; they are ours to stop (stop() finds them by temp dir)
        result = subprocess.run(
            argv, env=env, capture_output=True, timeout=120, check=False, start_new_session=True
        )
        self.started.append(result)
        if result.returncode != 0:
            raise RuntimeError(f"ray start failed ({result.returncode}): {result.stderr.decode()[-2000:]}")

    def _wait_for_nodes(self, n: int, timeout_s: float = 120) -> None:
        probe = (
            "import ray, sys\n"
            f"ray.init(address={self.address!r}, logging_level='ERROR', log_to_driver=False)\n"
            "print(sum(1 for node in ray.nodes() if node['Alive']))\n"
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = subprocess.run(
                [sys.executable, "-c", probe], env=self.env(), capture_output=True, timeout=120, check=False
            )
            if out.returncode == 0 and out.stdout.strip() == str(n).encode():
                return
            time.sleep(1)
        raise RuntimeError(f"the Ray cluster at {self.address} did not show {n} alive nodes in {timeout_s} s")

    def worker_processes(self, name: str) -> list[int]:
        """Ray worker processes of this cluster whose title holds ``name`` (e.g. an actor class)."""
        table = _processes()
        return sorted(pid for pid in processes_of(str(self.temp_dir)) if name in table.get(pid, (0, ""))[1])

    def stop(self, remove: bool = False) -> None:
        """Kill every process of this cluster (SIGKILL), then check that none is left; ``remove``: also
        delete its folder (logs, the second node's store)."""
        for _ in range(50):
            pids = processes_of(str(self.temp_dir))
            if not pids:
                if remove:
                    shutil.rmtree(self.root, ignore_errors=True)
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        raise RuntimeError(
            f"Ray processes of {self.temp_dir} still running: {sorted(processes_of(str(self.temp_dir)))}"
        )


def start_cluster(head_home: Path, nodes: int = 2) -> LoopbackCluster:
    """A running cluster of ``nodes`` nodes (2, or 1: the head alone) under a fresh short folder in the
    system's temp dir (Ray's socket paths must stay under 107 characters); stopped and cleaned up by the
    caller's :meth:`stop`. ``ray start`` records the head's address in that folder (``ray_current_cluster``),
    where a driver whose ``RAY_TMPDIR`` is :attr:`LoopbackCluster.root` finds it as it would find
    ``ray start --head`` run on its machine."""
    cluster = LoopbackCluster(Path(tempfile.mkdtemp(prefix="skray-")), nodes=nodes)
    try:
        cluster.start(head_home)
    except BaseException:
        cluster.stop(remove=True)
        raise
    return cluster
