"""simkernel score --engine ray streaming: does the driver's work hide behind the scoring, and does Ray's
object store stay flat as the input grows?

    python benchmarks/bench_stream.py [--sizes 50000,200000] [--workers N] [--score-rows 20000]

Data as in bench_scale.py (rows of the SAS pairs, every text distinct), all-MiniLM-L6-v2 fp32, mode sas,
CSV in and out, ``--chunk-rows 5000`` (so the blocks are a chunk at every size: at 50,000 rows and 2
workers the default 10,000 would give blocks of 6,250 rows, and the object store would hold smaller
blocks at the smaller size for that reason alone).

One Ray instance on this machine (as many CPUs as it has), started here; each run is a ``simkernel score``
process connected to it (``--address``), so this process can watch the object store while it runs:

1. driver alone: the Ray engine's driver with a stand-in for the cluster that returns a score for every
   block at once (this process; no Ray, no model): reading and checking each chunk, building its blocks,
   reading it again, rendering and writing every row: what the driver does in a real run, minus Ray's
   put and get. (``--driver-only ROWS`` measures only this.)
2. scoring alone: ``--workers`` BlockScorer actors, started and warm, scoring ``--score-rows`` rows put
   in the object store beforehand (no driver work while they score); the rate gives the scoring time of
   every size.
3. the streaming run: ``simkernel score --engine ray``; its scoring time from the summary (reading,
   scoring and writing, after the workers started), while a thread here samples the object store's
   bytes in use every 0.1 s (``object_store_bytes_used`` of the raylets' store stats), less the bytes in
   use before the run.

Targets: the streaming run within 1.15x max(driver alone, scoring alone) at every size; the object store's
peak at the largest size within 1.25x (plus 1 MB) of the smallest's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from support import MODEL_ID, REPO, machine, store_bundle

sys.path.insert(0, str(REPO))
from tests.cli.scale_data import distinct_rows, write_csv  # noqa: E402

CHUNK_ROWS = 5000


class StoreSampler:
    """The object store's bytes in use, sampled every ``interval`` seconds in a thread; ``peak`` is the
    largest sample less ``baseline`` (the bytes in use when it started)."""

    def __init__(self, interval: float = 0.1) -> None:
        try:
            import grpc  # noqa: F401 - Ray's internal API below needs it; ray[data] does not install it
        except ImportError:
            sys.exit(
                "bench_stream.py reads the object store through Ray's internal API, which needs grpcio: pip install -e '.[bench]'"
            )
        from ray._private.internal_api import get_memory_info_reply, get_state_from_address

        import ray

        self._state = get_state_from_address(ray.get_runtime_context().gcs_address)
        self._reply = get_memory_info_reply
        self.interval = interval
        self.baseline = self.used()
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def used(self) -> int:
        return int(self._reply(self._state).store_stats.object_store_bytes_used)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self.used())
            self._stop.wait(self.interval)

    def __enter__(self) -> StoreSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak(self) -> int:
        return max(0, max(self.samples, default=self.baseline) - self.baseline)


def cli(source: Path, folder: Path, *extra: str) -> tuple[dict, float]:
    """(summary, wall seconds) of one ``simkernel score`` process."""
    out, summary = folder / "out.csv", folder / "summary.json"
    argv = [sys.executable, "-m", "simkernel", "score", str(source), "-o", str(out), "-q", "--label", "label"]
    argv += ["--summary-json", str(summary), "--chunk-rows", str(CHUNK_ROWS), *extra]
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, check=False)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"simkernel score failed: {result.stderr.decode()}")
    out.unlink()
    return json.loads(summary.read_text(encoding="utf-8")), wall


def driver_alone(source: Path, folder: Path) -> float:
    """Seconds of the Ray engine's driver path (``elapsed_s`` of the summary) with a stand-in engine."""
    import simkernel.batch.score as score_module
    from simkernel.cli import main as cli_main
    from simkernel.ray.engine import RayEngine

    class InstantCluster(RayEngine):
        def load(self) -> None:
            self.workers = 1

        def scores(self, inputs, rows):  # type: ignore[no-untyped-def]
            import pyarrow as pa

            for chunk in inputs:
                self._block(pa, chunk, 0, len(chunk), 0)  # the table a real run puts
                yield [0.5] * len(chunk)

    real = score_module.make_engine
    score_module.make_engine = InstantCluster  # type: ignore[assignment]
    out, summary = folder / "driver-out.csv", folder / "driver.json"
    try:
        argv = ["score", str(source), "-o", str(out), "-q", "--label", "label", "--engine", "ray"]
        code = cli_main([*argv, "--chunk-rows", str(CHUNK_ROWS), "--summary-json", str(summary)])
    finally:
        score_module.make_engine = real
    if code != 0:
        sys.exit(f"the driver-alone run failed with exit status {code}")
    out.unlink()
    return float(json.loads(summary.read_text(encoding="utf-8"))["elapsed_s"])


def scoring_rate(rows: int, workers: int) -> float:
    """Rows/s of ``workers`` warm BlockScorer actors on blocks put beforehand (no driver work meanwhile)."""
    import pyarrow as pa
    from ray.util import ActorPool

    import ray
    from simkernel.ray import BlockScorer, SASScorer

    data = distinct_rows(rows)
    size = -(-rows // (workers * 4))
    blocks = []
    for start in range(0, rows, size):
        part = data[start : start + size]
        table = pa.table(
            {
                "predicted": pa.array([str(r["predicted"]) for r in part], pa.string()),
                "ground_truth": pa.array([str(r["ground_truth"]) for r in part], pa.string()),
            }
        )
        blocks.append(ray.put(table))
    actor = ray.remote(num_cpus=1)(BlockScorer)
    actors = [actor.remote(SASScorer, {"model": MODEL_ID, "threads": 1}) for _ in range(workers)]
    ray.get([a.ready.remote() for a in actors])
    pool = ActorPool(actors)
    started = time.perf_counter()
    scored = sum(t.num_rows for t in pool.map(lambda a, b: a.score.remote(b), blocks))
    elapsed = time.perf_counter() - started
    for a in actors:
        ray.kill(a)
    assert scored == rows
    return rows / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50000,200000", help="rows of the streaming runs")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Ray workers (1 CPU each)")
    parser.add_argument("--score-rows", type=int, default=20_000, help="rows of the scoring-alone run")
    parser.add_argument("--driver-only", type=int, metavar="ROWS", help="only the driver-alone figure")
    args = parser.parse_args()
    store_bundle(MODEL_ID)
    if args.driver_only:
        with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
            source = write_csv(distinct_rows(args.driver_only), Path(tmp) / "rows.csv")
            seconds = driver_alone(source, Path(tmp))
            print(
                f"driver alone (the Ray engine's driver, no cluster): {args.driver_only:,} rows in {seconds:.2f} s, "
                f"{args.driver_only / seconds:,.0f} rows/s\n{machine()}"
            )
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    # one Ray instance on this machine, on loopback, without the auth token Ray would write to ~/.ray
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")
    import ray

    ray.init(
        num_cpus=os.cpu_count() or 1, include_dashboard=False, logging_level="ERROR", log_to_driver=False
    )
    address = ray.get_runtime_context().gcs_address
    lines = [
        "| rows | driver alone | scoring alone | streaming run (wall) | run / max(driver, scoring) | object store peak | input bytes |",
        "|---|---|---|---|---|---|---|",
    ]
    peaks: list[int] = []
    ratios: list[float] = []
    try:
        rate = scoring_rate(min(args.score_rows, max(sizes)), args.workers)
        print(f"scoring alone: {rate:.0f} rows/s on {args.workers} workers", flush=True)
        with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
            folder = Path(tmp)
            for n in sizes:
                source = write_csv(distinct_rows(n), folder / f"rows-{n}.csv")
                driver_s = driver_alone(source, folder)
                scoring_s = n / rate
                with StoreSampler() as store:
                    summary, wall = cli(
                        source,
                        folder,
                        "--engine",
                        "ray",
                        "--address",
                        address,
                        "--workers",
                        str(args.workers),
                    )
                run_s = summary["score_s"]
                ratio = run_s / max(driver_s, scoring_s)
                peaks.append(store.peak)
                ratios.append(ratio)
                lines.append(
                    f"| {n:,} | {driver_s:.1f} s | {scoring_s:.1f} s | {run_s:.1f} s ({wall:.0f} s) | "
                    f"{ratio:.3f}x | {store.peak / 2**20:.1f} MB | {source.stat().st_size / 2**20:.1f} MB |"
                )
                print(lines[-1], [n for n in summary["notes"] if n.startswith("Ray")], flush=True)
                source.unlink()
    finally:
        ray.shutdown()
    flat = peaks[-1] <= 1.25 * peaks[0] + 2**20
    print("\n".join(lines))
    print(
        f"\nrun / max(driver, scoring) at most {max(ratios):.3f}x (target <= 1.15x); object store peak "
        f"{peaks[0] / 2**20:.1f} MB at {sizes[0]:,} rows, {peaks[-1] / 2**20:.1f} MB at {sizes[-1]:,} rows "
        f"({'flat' if flat else 'NOT flat'}: target <= 1.25x + 1 MB); --chunk-rows {CHUNK_ROWS}, "
        f"{args.workers} workers"
    )
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
