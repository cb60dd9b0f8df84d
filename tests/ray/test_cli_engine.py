"""``simkernel score --engine ray`` on a real two-node Ray cluster (loopback): the output file equals the
local engine's byte for byte (CSV, and Parquet with lists of ground truths), the second node gets the
model by shipping, and a worker killed with SIGKILL mid-job still leaves a complete, identical output."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.cli.scale_data import distinct_rows, write_csv

from simkernel.ray.engine import block_rows
from simkernel.runtime.store import bundles as store
from simkernel.tables.partial import partial_dir

N = 160
CHUNK = 40
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def streamed(text: str, window: int) -> tuple[int, int]:
    """(blocks, the most in the object store at once) from the Ray engine's note in a summary."""
    found = re.search(
        rf"Ray: (\d+) blocks of up to \d+ rows, at most (\d+) in the object store at once \(--ray-in-flight {window}\)",
        text,
    )
    assert found, text
    return int(found.group(1)), int(found.group(2))


def score(argv: list, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "simkernel", "score", *map(str, argv)],
        capture_output=True,
        env=env,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ray-cli")
    write_csv(distinct_rows(N), folder / "in.csv")
    return folder


@pytest.fixture(scope="module")
def local_csv(data) -> bytes:
    """The local engine's output of in.csv (this process's environment, no Ray)."""
    result = score(
        [data / "in.csv", "-q", "-o", data / "local.csv", "--chunk-rows", CHUNK, "--label", "label"]
    )
    assert result.returncode == 0, result.stderr.decode()
    return (data / "local.csv").read_bytes()


def test_csv_output_equals_the_local_engine_and_the_model_is_shipped(ray_cluster, data, local_csv):
    shipped = store.MANIFEST
    worker_bundle = ray_cluster.worker_home / "models" / MODEL.replace("/", "--")
    assert not worker_bundle.exists()  # node 2 starts with an empty store
    out, summary = data / "ray.csv", data / "ray.json"
    result = score(
        [data / "in.csv", "-o", out, "--chunk-rows", CHUNK, "--label", "label", "--summary-json", summary]
        + ["--engine", "ray", "--address", ray_cluster.address, "--workers", 2],
        env=ray_cluster.env(),
    )
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert out.read_bytes() == local_csv
    assert not partial_dir(out).exists()
    # the summary is the local engine's, and nothing but the summary reached stderr
    figures = json.loads(summary.read_text(encoding="utf-8"))
    assert figures["rows"] == N and "Ray cluster 127.0.0.1" in figures["description"]
    assert err.startswith("simkernel score: 160 rows, mode sas, model sentence-transformers/all-MiniLM-L6-v2")
    assert "WARNING" not in err and "INFO" not in err
    # streaming: more blocks than the default window (2 per worker), never more than it in the object store
    blocks, in_flight = streamed(err, window=4)
    assert blocks > 4 and 1 <= in_flight <= 4
    # node 2 had no model: an actor there received it from node 1, complete and checked
    assert (worker_bundle / shipped).is_file() and (worker_bundle / "model.onnx").is_file()
    source = store.model_dir(MODEL)
    for name in ("model.onnx", "tokenizer.json", shipped):
        assert (worker_bundle / name).read_bytes() == (source / name).read_bytes()
    store.verify_bundle(worker_bundle, check_hashes=True)
    assert not list((ray_cluster.worker_home / "tmp").glob("stage-*"))  # no staging folder left over


def test_parquet_with_lists_of_ground_truths_one_worker_and_other_batches_equals_the_local_engine(
    ray_cluster, data
):
    rows = distinct_rows(60)
    for i, row in enumerate(
        rows
    ):  # several correct answers on some rows (the best one counts), one on others
        row["ground_truth"] = [row["ground_truth"], f"another answer {i}", "Москва"][: 1 + 2 * (i % 7 == 0)]
    pq.write_table(pa.Table.from_pylist(rows), data / "in.parquet")  # ground_truth: list<string>
    common = [data / "in.parquet", "--chunk-rows", 25, "-q"]
    local = score([*common, "-o", data / "local.parquet"])  # all cores, batches of 32
    assert local.returncode == 0, local.stderr.decode()
    # another partitioning: one worker of 1 thread, batches of 5 texts: the same bits
    ray_run = ["--engine", "ray", "--address", ray_cluster.address, "--workers", 1, "--batch-size", 5]
    ray_run += ["--ray-in-flight", 1, "--summary-json", data / "ray-parquet.json"]
    remote = score([*common, "-o", data / "ray.parquet", *ray_run], env=ray_cluster.env())
    assert remote.returncode == 0, remote.stderr.decode()
    assert (data / "ray.parquet").read_bytes() == (data / "local.parquet").read_bytes()
    # one block in flight: each block is read only after the one before came back scored
    notes = json.loads((data / "ray-parquet.json").read_text(encoding="utf-8"))["notes"]
    blocks, in_flight = streamed("\n".join(notes), window=1)
    assert blocks >= 3 and in_flight == 1  # at least a block per chunk of 25 rows
    scored = pq.read_table(data / "ray.parquet")
    assert scored.schema.field("score").type == pa.float32() and scored.num_rows == 60


def test_a_worker_killed_mid_job_still_gives_the_identical_output(ray_cluster, data, local_csv):
    out = data / "killed.csv"
    argv = [data / "in.csv", "-q", "-o", out, "--chunk-rows", CHUNK, "--label", "label"]
    argv += ["--engine", "ray", "--address", ray_cluster.address, "--workers", 2]
    process = subprocess.Popen(
        [sys.executable, "-m", "simkernel", "score", *map(str, argv)],
        env=ray_cluster.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    victim = None
    deadline = time.monotonic() + 300
    while victim is None and process.poll() is None and time.monotonic() < deadline:
        # a scoring actor that has started work: the process Ray titles after its task
        busy = ray_cluster.worker_processes("BlockScorer.score")
        if busy:
            victim = busy[0]
            break
        time.sleep(0.05)
    assert victim is not None, "no scoring worker was seen at work"
    os.kill(victim, signal.SIGKILL)
    _, err = process.communicate(timeout=600)
    assert process.returncode == 0, err.decode()
    assert out.read_bytes() == local_csv  # Ray restarted the actor and retried its blocks


@pytest.mark.parametrize(
    ("rows", "workers", "expected"),
    [(160, 2, 20), (100_000, 2, 10_000), (10, 4, 16), (1_000_000, 40, 6_250)],
)
def test_blocks_give_every_worker_several(rows, workers, expected):
    assert block_rows(rows, workers, chunk_rows=10_000) == expected


def test_without_address_it_connects_to_the_cluster_running_on_this_machine(data, local_csv):
    """`ray start --head` on this machine, then `--engine ray` without --address: the command joins that
    cluster (Ray refuses num_cpus there) and says so in the summary."""
    from tests.ray.cluster import start_cluster

    from simkernel.runtime.store.bundles import store_root

    head = start_cluster(store_root(), nodes=1)
    try:
        env = head.env(RAY_TMPDIR=str(head.root))  # where this machine's `ray start` records its address
        env.pop("RAY_ADDRESS", None)
        out = data / "running.csv"
        result = score(
            [data / "in.csv", "-o", out, "--chunk-rows", CHUNK, "--label", "label", "--engine", "ray"], env
        )
        assert result.returncode == 0, result.stderr.decode()
        summary = result.stderr.decode()
        assert (
            f"Ray: connected to the cluster already running on this machine at {head.address} (1 CPUs"
            in summary
        )
        assert f"Ray cluster {head.address}: 1 worker x 1 CPU" in summary
        assert out.read_bytes() == local_csv
    finally:
        head.stop(remove=True)


def test_without_address_and_no_cluster_it_starts_ray_here_and_stops_it(data, local_csv):
    import tempfile

    from tests.ray.cluster import LOOPBACK_ENV, SLOW_MACHINE_ENV, processes_of

    root = Path(tempfile.mkdtemp(prefix="skray-"))  # no cluster recorded there
    try:
        env = {
            **os.environ,
            **LOOPBACK_ENV,
            **SLOW_MACHINE_ENV,
            "HF_HUB_OFFLINE": "1",
            "RAY_TMPDIR": str(root),
        }
        env.pop("RAY_ADDRESS", None)
        out = data / "own.csv"
        argv = [data / "in.csv", "-o", out, "--chunk-rows", CHUNK, "--label", "label", "--engine", "ray"]
        result = score([*argv, "--workers", 1], env)
        assert result.returncode == 0, result.stderr.decode()
        summary = result.stderr.decode()
        assert "Ray on this machine: 1 worker x 1 CPU" in summary
        assert "connected to the cluster already running" not in summary
        assert out.read_bytes() == local_csv
        assert not processes_of(str(root)), "the Ray instance the command started is still running"
    finally:
        from tests.ray.cluster import LoopbackCluster

        LoopbackCluster(root).stop(remove=True)


def test_the_engine_reads_a_block_only_once_a_scored_one_came_back(ray_cluster, monkeypatch):
    """The streaming bound, counted here, not by the engine: the engine runs in this process on an input
    reader instrumented by the test, which logs when each chunk is read; the test logs when each chunk's
    scores come back. With ``--ray-in-flight`` W (one block per chunk here), chunk k is read only once the
    scores of chunk k - W are back: at most W blocks are submitted and not back, plus the one just read
    (reading every chunk before scoring would read all ten before the first scores)."""
    from tests.ray.cluster import LOOPBACK_ENV

    from simkernel.batch.job import ScoreJob
    from simkernel.batch.rows import ChunkInputs
    from simkernel.ray.engine import RayEngine

    for name, value in ray_cluster.env().items():
        if name in LOOPBACK_ENV or name.startswith("RAY_") or name == "HF_HUB_OFFLINE":
            monkeypatch.setenv(name, value)
    rows = distinct_rows(160)
    chunk = 16  # block_rows(160, 2 workers, 16) is 16: one block per chunk, ten chunks
    events: list[tuple[str, int]] = []

    def reader():
        for k, start in enumerate(range(0, len(rows), chunk)):
            part = rows[start : start + chunk]
            events.append(("read", k))
            yield ChunkInputs([r["predicted"] for r in part], [r["ground_truth"] for r in part])

    for window in (1, 2):
        events.clear()
        job = ScoreJob(
            file="-",
            model=MODEL,
            address=ray_cluster.address,
            workers=2,
            chunk_rows=chunk,
            ray_in_flight=window,
        )
        engine = RayEngine(job)
        try:
            engine.load()
            scores = []
            for k, chunk_scores in enumerate(engine.scores(reader(), len(rows))):
                events.append(("scored", k))
                scores.extend(chunk_scores)
        finally:
            engine.close()
        assert len(scores) == len(rows)
        reads = [k for kind, k in events if kind == "read"]
        assert reads == list(range(10))
        back = 0
        worst = 0
        for kind, k in events:
            if kind == "scored":
                back += 1
            else:
                assert back >= k - window, (window, events)  # chunk k read before chunk k - W came back
                worst = max(worst, k + 1 - back)
        assert worst == window + 1, (window, events)  # W in flight and the one just read, never more
    from simkernel.components.evaluators import SASEvaluator

    expected = SASEvaluator(model=MODEL).run(
        [r["ground_truth"] for r in rows], [r["predicted"] for r in rows]
    )
    assert scores == expected["individual_scores"]  # the local evaluator's, bit for bit
