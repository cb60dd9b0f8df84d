"""What a Spark worker does around the model, checked with counts kept by the test: the per-node install
of a shipped bundle under the store's lock (several worker processes at once: one installs, the others wait
and find it), and the model loaded once per worker process however many batches it scores."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

MODEL_ID = "simkernel-test/shipped-bundle"
WORKERS = 4


def _shipped_bundle(folder: Path) -> Path:
    """A small complete bundle (config, an .onnx file, other files, its manifest with sizes and SHA-256),
    as SparkFiles would hold it on a node."""
    from simkernel.runtime.store.manifest import write_manifest

    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}), encoding="utf-8")
    (folder / "model.onnx").write_bytes(os.urandom(1 << 20))
    (folder / "tokenizer.json").write_text("{}", encoding="utf-8")
    write_manifest(folder, {"id": MODEL_ID})
    return folder


def _worker(source: str, log: str, barrier, results) -> None:
    """One Spark worker process of the node: installs the shipped bundle (SparkFiles stands in for Spark's)."""
    import simkernel.spark.workers as workers
    from simkernel.runtime.store import bundles as store

    files = SimpleNamespace(SparkFiles=SimpleNamespace(get=lambda name: source))
    workers.pyspark_module = lambda feature="simkernel.spark": files
    staged = store.staged_bundle

    def counted(*args, **kwargs):  # the test's count of installs: one line per staged install, then a pause
        with open(log, "a", encoding="utf-8") as handle:  # that keeps the others at the lock meanwhile
            handle.write(f"{os.getpid()}\n")
        time.sleep(0.5)
        return staged(*args, **kwargs)

    store.staged_bundle = counted
    barrier.wait(60)
    try:
        results.put((os.getpid(), str(workers._install({"id": MODEL_ID, "name": "bundle"}, "fp32")), None))
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        results.put((os.getpid(), None, repr(exc)))


def test_workers_of_a_node_install_the_shipped_bundle_once_under_the_lock(tmp_path, monkeypatch):
    from simkernel.runtime.store import bundles as store
    from simkernel.runtime.store.manifest import read_manifest

    source = _shipped_bundle(tmp_path / "sparkfiles" / "bundle")
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "node-store"))
    log = tmp_path / "installs.log"
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(WORKERS), context.Queue()
    processes = [
        context.Process(target=_worker, args=(str(source), str(log), barrier, results))
        for _ in range(WORKERS)
    ]
    for process in processes:
        process.start()
    got = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    assert [error for _, _, error in got] == [None] * WORKERS
    dest = store.model_dir(MODEL_ID)
    assert {folder for _, folder, _ in got} == {str(dest)}  # every worker got the node's store folder
    assert len(log.read_text().split()) == 1  # installed once: the others waited and found it
    assert (dest / "model.onnx").read_bytes() == (source / "model.onnx").read_bytes()
    assert read_manifest(dest)["id"] == MODEL_ID
    store.verify_bundle(dest, check_hashes=True)
    assert not list((tmp_path / "node-store" / "tmp").glob("*"))  # no staging folder left over


SITECUSTOMIZE = """\
# Written by tests/spark/test_workers.py onto the Spark workers' PYTHONPATH: every onnxruntime session a
# worker process opens is logged (process id, model file) to $SIMKERNEL_TEST_SESSION_LOG.
import os

_log = os.environ.get("SIMKERNEL_TEST_SESSION_LOG")
if _log:
    import onnxruntime

    _init = onnxruntime.InferenceSession.__init__

    def _counted(self, path_or_bytes, *args, **kwargs):
        with open(_log, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {os.path.basename(str(path_or_bytes))}\\n")
        _init(self, path_or_bytes, *args, **kwargs)

    onnxruntime.InferenceSession.__init__ = _counted
"""


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_the_model_loads_once_per_worker_process_across_its_tasks(spark, tmp_path):
    """16 partitions scored by SAS and embedded on ``local[2]``: Spark reuses its Python workers across
    tasks, and each worker process opens the model's onnxruntime session once (the sessions are counted by
    a hook the test puts on the workers' path, the tasks by the process ids a probe UDF reports)."""
    import pandas as pd
    from pyspark.sql.functions import pandas_udf
    from tests.spark.conftest import MODEL

    from simkernel.spark import embedding_udf, sas_udf

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = tmp_path / "sessions.log"
    log.touch()
    environment = spark.sparkContext.environment
    saved = {name: environment.get(name) for name in ("PYTHONPATH", "SIMKERNEL_TEST_SESSION_LOG")}
    environment["PYTHONPATH"] = str(hook)
    environment["SIMKERNEL_TEST_SESSION_LOG"] = str(log)

    def pid(scores: pd.Series) -> pd.Series:
        return pd.Series([os.getpid()] * len(scores))

    pid.__annotations__ = {"scores": pd.Series, "return": pd.Series}
    pid_udf = pandas_udf(pid, "long")
    try:
        rows = [(f"answer {i}", f"the correct answer {i % 13}") for i in range(320)]
        df = spark.createDataFrame(rows, "p string, g string").repartition(16)
        sas = df.select(pid_udf(sas_udf(MODEL)("p", "g")).alias("pid")).collect()
        embedded = df.select(pid_udf(embedding_udf(MODEL)("p")).alias("pid")).collect()
    finally:
        for name, value in saved.items():
            if value is None:
                environment.pop(name, None)
            else:
                environment[name] = value
    task_pids = {r.pid for r in sas} | {r.pid for r in embedded}
    sessions = [line.split() for line in log.read_text(encoding="utf-8").splitlines()]
    opened: dict[int, int] = {}
    for pid_text, name in sessions:
        if name == "model.onnx":
            opened[int(pid_text)] = opened.get(int(pid_text), 0) + 1
    assert set(opened) == task_pids, (opened, task_pids)  # the hook saw every worker that scored
    assert len(sas) + len(embedded) == 640 and len(task_pids) <= 2  # local[2]: two workers, reused
    assert opened == dict.fromkeys(task_pids, 1), opened  # one session per worker for 32 tasks
