"""OnnxEncoderSession.map_batches: data-parallel batches on a single-threaded twin session."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from simkernel.runtime.inference.bundle import onnx_file
from simkernel.runtime.inference.session import TOKEN_EMBEDDING_OUTPUTS, OnnxEncoderSession


@pytest.fixture(scope="module")
def graph(default_bundle):
    return onnx_file(default_bundle, "fp32")


def token_batches(count: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``count`` batches of random token ids, lengths 3..40, batch sizes 1..9."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        ids = rng.integers(1000, 2000, (int(rng.integers(1, 10)), int(rng.integers(3, 41)))).astype(np.int64)
        out.append((ids, np.ones_like(ids), np.zeros_like(ids)))
    return out


def forward(run, batch):
    return run(*batch)


def test_parallel_results_equal_sequential_and_keep_order(graph):
    batches = token_batches(12)
    sequential = OnnxEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=1)
    parallel = OnnxEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=2)
    assert sequential.workers == 1 and parallel.workers == 2
    expected = sequential.map_batches(forward, batches)
    got = parallel.map_batches(forward, batches)
    assert [g.shape for g in got] == [e.shape for e in expected] == [(b[0].shape + (384,)) for b in batches]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, atol=1e-5)
    assert sequential._twin is None  # one thread: never a second session


def test_twin_session_made_only_for_several_batches(graph):
    session = OnnxEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=2)
    names = []

    def record(run, batch):
        names.append(threading.current_thread().name)
        return run(*batch)

    session.map_batches(record, token_batches(1))
    assert session._twin is None and names == [threading.current_thread().name]
    names.clear()
    session.map_batches(record, token_batches(6))
    assert session._twin is not None
    assert all(n.startswith("simkernel-batch") for n in names) and len(names) == 6
    assert session.map_batches(record, []) == []


def test_exception_in_a_batch_is_raised_to_the_caller(graph):
    session = OnnxEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=2)
    batches = token_batches(5)

    def fail_on_third(run, batch):
        if batch is batches[2]:
            raise ValueError("batch 2 is bad")
        return run(*batch)

    with pytest.raises(ValueError, match="batch 2 is bad"):
        session.map_batches(fail_on_third, batches)
    # the pool is still usable afterwards
    assert len(session.map_batches(forward, batches)) == 5


def test_default_workers_follow_the_cpus(graph, monkeypatch):
    # the figure of simkernel.cpu_budget (affinity mask and cgroup quota; tested in tests/test_cpu_budget.py)
    import simkernel.runtime.inference.session as session_module

    monkeypatch.setattr(session_module, "available_cpus", lambda: 3)
    assert OnnxEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS).workers == 3
    monkeypatch.setattr(session_module, "available_cpus", lambda: 16)
    assert OnnxEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS).workers == 8  # capped
    assert OnnxEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=5).workers == 5


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_gets_its_own_worker_pool(graph):
    """A child forked after the pool exists inherits the pool object but not its threads: it must make
    its own instead of waiting forever."""
    session = OnnxEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=2)
    batches = token_batches(4)
    expected = session.map_batches(forward, batches)
    pid = os.fork()
    if pid == 0:  # child: exit status 0 = same results
        try:
            got = session.map_batches(forward, batches)
            same = all(np.allclose(g, e, atol=1e-5) for g, e in zip(got, expected, strict=True))
            os._exit(0 if same else 1)
        except BaseException:
            os._exit(2)
    deadline = time.monotonic() + 120
    while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in map_batches")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(waited[1]) == 0
