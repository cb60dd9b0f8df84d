"""Fixtures of the Ray tests: one real two-node cluster on loopback for the whole test session (started on
first use, stopped at the end, also after a failure), and a driver connected to it from this process."""

from __future__ import annotations

import os

import numpy as np
import pytest
from tests.components.conftest import minilm_checkpoint, st_minilm  # noqa: F401 - fixtures used here
from tests.ray.cluster import LOOPBACK_ENV, start_cluster

from simkernel.runtime.store.bundles import store_root


@pytest.fixture(scope="session")
def ray_cluster(minilm_in_store):
    """The cluster: node 1 on this machine's model store, node 2 on an empty one (``worker_home``)."""
    cluster = start_cluster(store_root())
    try:
        yield cluster
    finally:
        cluster.stop(remove=True)


@pytest.fixture(scope="session")
def minilm_in_store() -> str:
    """all-MiniLM-L6-v2 in this machine's store (prepared by `make models`; a loud failure if missing)."""
    from tests.components.conftest import require_stored_model

    return require_stored_model("sentence-transformers/all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def ray_driver(ray_cluster):
    """``ray``, connected to the cluster from this process (disconnected after the module)."""
    os.environ.update(LOOPBACK_ENV)  # read when ray is imported: keep 127.0.0.1 as it is
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "WARNING")
    import ray

    ray.init(address=ray_cluster.address, logging_level="ERROR", log_to_driver=False)
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="session")
def reference_embed(st_minilm):  # noqa: F811
    """``embed(texts) -> (n, 384) float64``: sentence-transformers on the same checkpoint (torch)."""

    def embed(texts: list[str]) -> np.ndarray:
        return st_minilm.encode(list(texts), batch_size=32, convert_to_numpy=True).astype(np.float64)

    return embed
