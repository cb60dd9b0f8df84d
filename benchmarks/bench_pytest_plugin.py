"""What loading simkernel's pytest plugin adds to pytest's start-up (the target: at most 20 ms).

Two measurements, each in fresh processes:

- start-up: ``python -m pytest -q <dir>`` on a folder with one trivial test, with the plugin loaded
  (``-p no:simkernel -p simkernel.pytest_plugin``: by name, so the figure does not depend on the installed
  entry points) and with it off (``-p no:simkernel``), alternating the two round by round; the cost is the
  median and the lower quartile of the paired differences (a whole pytest start-up is ~0.3-0.5 s, so single
  rounds are noisy);
- import: ``python -X importtime`` of ``import pytest`` then ``import simkernel.pytest_plugin``: the
  cumulative microseconds Python reports for the plugin's own import (what pytest pays to load it), and
  the CPU time of the same import (``time.process_time``), which other processes inflate less.

Neither loads a model: the plugin imports nothing heavy until a test uses the ``semantic`` fixture.

    python benchmarks/bench_pytest_plugin.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from support import alternate, machine

ON = ("-p", "no:simkernel", "-p", "simkernel.pytest_plugin")
OFF = ("-p", "no:simkernel")


def run_pytest(folder: str, plugin_args: tuple[str, ...]) -> None:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_args, folder]
    subprocess.run(command, check=True, capture_output=True, cwd=folder)


def import_microseconds() -> int:
    code = "import pytest; import simkernel.pytest_plugin"
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], check=True, capture_output=True, text=True
    ).stderr
    for line in err.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) == 3 and fields[2] == "simkernel.pytest_plugin":
            return int(fields[1])
    raise RuntimeError("simkernel.pytest_plugin is not in the -X importtime output")


def import_cpu_ms() -> float:
    """CPU time (user + system, ``time.process_time``) of importing the plugin with pytest already imported:
    what loading it costs, less sensitive than wall time to other processes on the machine."""
    code = (
        "import time, pytest; start = time.process_time(); import simkernel.pytest_plugin; "
        "print((time.process_time() - start) * 1000)"
    )
    return float(
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "test_trivial.py").write_text("def test_trivial():\n    assert True\n")
        run_pytest(folder, ON)  # warm the file cache once
        times = alternate(
            {"on": lambda: run_pytest(folder, ON), "off": lambda: run_pytest(folder, OFF)}, args.rounds
        )
    on, off = times["on"], times["off"]
    differences = sorted((a - b) * 1000 for a, b in zip(on, off, strict=True))
    imports = sorted(import_microseconds() / 1000 for _ in range(args.rounds))
    print("| measure | median | lower quartile | min |")
    print("|---|---|---|---|")
    for name, seconds in (("off", off), ("on", on)):
        median, best = statistics.median(seconds) * 1000, min(seconds) * 1000
        print(f"| pytest start-up, plugin {name} | {median:.0f} ms | | {best:.0f} ms |")
    print(
        f"| paired difference (on - off) | {statistics.median(differences):.1f} ms "
        f"| {differences[len(differences) // 4]:.1f} ms | {differences[0]:.1f} ms |"
    )
    print(
        f"| import simkernel.pytest_plugin (-X importtime, cumulative) | {statistics.median(imports):.2f} ms "
        f"| {imports[len(imports) // 4]:.2f} ms | {imports[0]:.2f} ms |"
    )
    cpu = sorted(import_cpu_ms() for _ in range(args.rounds))
    print(
        f"| import simkernel.pytest_plugin, CPU time (process_time) | {statistics.median(cpu):.2f} ms "
        f"| {cpu[len(cpu) // 4]:.2f} ms | {cpu[0]:.2f} ms |"
    )
    print(f"\n{machine()}; python {sys.version.split()[0]}, {args.rounds} rounds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
