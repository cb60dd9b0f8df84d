"""Fixtures of the Spark tests: a real local Spark (``local[2]``, loopback only, no UI) started once for the
session and stopped at the end, also after a failure. Its Python workers run on an empty model store of
their own with the hub switched off (``HF_HUB_OFFLINE=1``): a node without the model, which gets it only
from the driver (``SparkContext.addFile``). The driver (this process) uses this machine's store."""

from __future__ import annotations

import os
import sys

import pytest
from tests.components.conftest import require_stored_model

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class Sparks:
    """One SparkSession at a time, made for a ``spark.task.cpus`` (a new one when another is asked for:
    the JVM starts once, a SparkContext in it takes seconds)."""

    def __init__(self, worker_home: str) -> None:
        self.worker_home = worker_home
        self.session = None
        self.settings: tuple[int, str] = (0, "")

    def get(self, cpus: int = 1, worker_home: str | None = None):
        """The session of ``spark.task.cpus`` = ``cpus`` whose workers use the store ``worker_home``
        (default: the session's empty one)."""
        home = worker_home or self.worker_home
        if self.session is not None and self.settings == (cpus, home):
            return self.session
        self.stop()
        from pyspark.sql import SparkSession

        builder = (
            SparkSession.builder.master("local[2]")
            .appName("simkernel-tests")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.task.cpus", str(cpus))
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.executorEnv.SIMKERNEL_HOME", home)
            .config("spark.executorEnv.HF_HUB_OFFLINE", "1")
        )
        self.session = builder.getOrCreate()
        self.session.sparkContext.setLogLevel("ERROR")
        self.settings = (cpus, home)
        return self.session

    def stop(self) -> None:
        if self.session is not None:
            self.session.stop()
            self.session = None


@pytest.fixture(scope="session")
def sparks(tmp_path_factory):
    require_stored_model(MODEL)
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "SPARK_LOCAL_IP")}
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run this venv's python
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    pool = Sparks(str(tmp_path_factory.mktemp("spark-worker-home")))
    try:
        yield pool
    finally:
        pool.stop()
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        if gateway is not None:  # the JVM: nothing left running
            gateway.shutdown()
            SparkContext._gateway = None
            SparkContext._jvm = None
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def spark(sparks):
    """The SparkSession with spark.task.cpus = 1."""
    return sparks.get(1)
