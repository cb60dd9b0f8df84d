"""simkernel score on large files: the local engine's speed and memory by file size, and the Ray engine.

    python benchmarks/bench_scale.py [--sizes 10000,50000,200000] [--ray-rows 20000] [--rounds 2]
                                     [--skip-local] [--skip-ray] [--driver-only ROWS]
    python benchmarks/bench_scale.py --bertscore-layer 4 --sizes 10000,100000,1000000 --skip-ray

Data: rows made from the 5,025 SAS pairs of tests/data/sas, cycled, every text made distinct by its row
number (tests/cli/scale_data.py), so the encoder's deduplication and cache hide no work; one row in 50 is
Russian or Chinese. Model all-MiniLM-L6-v2 fp32, mode sas, CSV in and out, default --chunk-rows (10,000).

1. Local engine by size: ``simkernel score`` in a fresh process per size (one run each, sizes in turn),
   rows/s from its summary (scoring time: reading, scoring and writing the chunks, not the model load),
   peak RSS of the process from ``wait4`` (the kernel's high-water mark of its resident memory). The
   memory target: 200,000 rows within 100 MB of 10,000 rows (``--bertscore-layer L``: the same in
   ``--mode bertscore``, whose token vectors live one chunk at a time). Then the command line's own work on the
   largest file without a model (``--mode exact``): the rate one driver can feed a cluster at
   (docs/SCALING.md).
2. Ray engine on this machine: one Ray instance with as many CPUs as the machine has; per round, the
   local engine (all cores), the Ray engine with 1 worker and with 2 workers (1 CPU each) take turns on
   the same file, in this process (Ray started once; its workers load the model in every run, as a
   real run does). Rows/s from each run's summary. Targets: 2 workers >= 1.7x one worker; Ray's 2
   workers within 15% of the local engine on the same cores.

Prints the Markdown tables of docs/benchmarks.md ("Scale").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support import MODEL_ID, REPO, machine, store_bundle

sys.path.insert(0, str(REPO))
from tests.cli.scale_data import distinct_rows, write_csv  # noqa: E402


def local_run(source: Path, out: Path, summary: Path, *extra: str) -> tuple[dict, int, float]:
    """(summary, peak RSS in bytes, wall seconds) of one ``simkernel score`` process."""
    argv = [sys.executable, "-m", "simkernel", "score", str(source), "-o", str(out), "-q"]
    argv += ["--summary-json", str(summary), "--label", "label", *extra]
    started = time.perf_counter()
    process = subprocess.Popen(argv, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    err = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"simkernel score failed: {err}")
    rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return json.loads(summary.read_text(encoding="utf-8")), rss, wall


def by_size(sizes: list[int], folder: Path, mode: tuple[str, ...] = ()) -> str:
    lines = [
        "| rows | scoring rows/s | wall time | peak RSS | RSS vs the smallest |",
        "|---|---|---|---|---|",
    ]
    first_rss = None
    for n in sizes:
        source = write_csv(distinct_rows(n), folder / f"rows-{n}.csv")
        summary, rss, wall = local_run(source, folder / f"out-{n}.csv", folder / f"summary-{n}.json", *mode)
        first_rss = first_rss or rss
        lines.append(
            f"| {n:,} | {summary['rows_per_s']:.0f} | {wall:.0f} s | {rss / 2**20:.0f} MB | "
            f"{(rss - first_rss) / 2**20:+.0f} MB |"
        )
        print(lines[-1], flush=True)
        source.unlink()
        (folder / f"out-{n}.csv").unlink()
    return "\n".join(lines)


def driver_alone(rows: int, folder: Path) -> str:
    """The work of the command line itself, no model: ``--mode exact`` on the same kind of file (read and
    check it, compare the texts, render and write every row), rows/s of the whole process."""
    source = write_csv(distinct_rows(rows), folder / "driver-rows.csv")
    _, rss, wall = local_run(source, folder / "driver-out.csv", folder / "driver.json", "--mode", "exact")
    size = source.stat().st_size
    source.unlink()
    (folder / "driver-out.csv").unlink()
    return (
        f"driver alone (`--mode exact`, no model): {rows:,} rows ({size / 1e6:.1f} MB of CSV) in {wall:.1f} s, "
        f"{rows / wall:,.0f} rows/s, peak RSS {rss / 2**20:.0f} MB"
    )


def engines(rows: int, rounds: int, folder: Path) -> str:
    """Local vs Ray 1 worker vs Ray 2 workers, turns alternating, in this process."""
    # one Ray instance on this machine, on loopback, without the auth token Ray would write to ~/.ray
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")
    import ray
    from simkernel.cli import main

    cpus = os.cpu_count() or 1
    ray.init(num_cpus=cpus, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    source = write_csv(distinct_rows(rows), folder / "ray-rows.csv")
    base = ["score", str(source), "-q", "--label", "label"]
    runs = {
        "local engine": base,
        "Ray, 1 worker": [*base, "--engine", "ray", "--workers", "1"],
        "Ray, 2 workers": [*base, "--engine", "ray", "--workers", "2"],
    }
    rates: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    try:
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                out, summary = folder / "ray-out.csv", folder / "ray-summary.json"
                code = main([*runs[name], "-o", str(out), "--summary-json", str(summary)])
                if code != 0:
                    sys.exit(f"{name} failed with exit status {code}")
                rates[name].append(json.loads(summary.read_text(encoding="utf-8"))["rows_per_s"])
                print(f"round {r + 1}: {name} {rates[name][-1]:.0f} rows/s", flush=True)
    finally:
        ray.shutdown()
    best = {name: max(values) for name, values in rates.items()}
    median = {name: sorted(values)[len(values) // 2] for name, values in rates.items()}
    lines = [
        "| engine | rows/s best / median | vs local (best) | vs Ray 1 worker (best) |",
        "|---|---|---|---|",
    ]
    for name in names:
        lines.append(
            f"| {name} | {best[name]:.0f} / {median[name]:.0f} | {best[name] / best['local engine']:.2f}x | "
            f"{best[name] / best['Ray, 1 worker']:.2f}x |"
        )
    lines.append("")
    lines.append(
        f"{rows:,} rows, {rounds} rounds; Ray 2 workers / 1 worker = "
        f"{best['Ray, 2 workers'] / best['Ray, 1 worker']:.2f}x (target >= 1.7x); Ray 2 workers / local = "
        f"{best['Ray, 2 workers'] / best['local engine']:.2f}x (target >= 0.85x, overhead <= 15%)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,50000,200000", help="rows of the local engine's files")
    parser.add_argument("--ray-rows", type=int, default=20_000, help="rows of the engines' comparison")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the engines' comparison")
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--driver-only", type=int, metavar="ROWS", help="only the driver-alone figure")
    parser.add_argument(
        "--bertscore-layer",
        type=int,
        metavar="L",
        help="the local engine's sizes in --mode bertscore at layer L (P, R, F columns) instead of sas",
    )
    args = parser.parse_args()
    store_bundle(MODEL_ID)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        folder = Path(tmp)
        if args.driver_only:
            print(driver_alone(args.driver_only, folder), f"\n{machine()}", flush=True)
            return
        if not args.skip_local:
            sizes = [int(s) for s in args.sizes.split(",")]
            mode = ("--mode", "bertscore", "--metric-option", f"layer={args.bertscore_layer}")
            print(by_size(sizes, folder, mode if args.bertscore_layer is not None else ()), flush=True)
            print(driver_alone(max(sizes), folder), flush=True)
        if not args.skip_ray:
            print(engines(args.ray_rows, args.rounds, folder), flush=True)
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
