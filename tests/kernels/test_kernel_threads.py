"""Threads: the GIL is released during native work, and concurrent calls give the right answers."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import kernel_reference as ref
import numpy as np
import pytest
from kernel_reference import assert_close, random_rows

from simkernel import kernels


def _long_calls(rng):
    """One call per public function, each lasting tenths of a second on the serial backend."""
    a = random_rows(rng, 1000, 384)
    b = random_rows(rng, 1000, 384)
    big = random_rows(rng, 200_000, 384)
    offsets = np.linspace(0, len(big), 1001).astype(np.int64)
    tokens = random_rows(rng, 4000, 384)
    texts = np.arange(0, 4001, 100, dtype=np.int64)  # 40 texts of 100 tokens a side
    return {
        "normalize": lambda: kernels.normalize(big),
        "paired_cosine": lambda: kernels.paired_cosine(big, big),
        "cosine_matrix": lambda: kernels.cosine_matrix(a, b),
        "cosine_reduce ragged": lambda: kernels.cosine_reduce(a, big, offsets, reduce=("max", "mean")),
        "cosine_reduce dense": lambda: kernels.cosine_reduce(a, b, reduce="mean", clamp=(0.0, 1.0)),
        "greedy_match": lambda: kernels.greedy_match(tokens, texts, tokens[::-1].copy(), texts),
    }


@pytest.mark.parametrize(
    "name",
    [
        "normalize",
        "paired_cosine",
        "cosine_matrix",
        "cosine_reduce ragged",
        "cosine_reduce dense",
        "greedy_match",
    ],
)
def test_gil_is_released_during_the_call(name):
    """While a worker thread is inside the kernel, the main thread keeps running Python code.

    The main thread counts its wake-ups (every millisecond) until the worker's call has returned. If the
    kernel held the GIL, the main thread could run only just before the call and just after it (a couple of
    wake-ups at most), whatever the call's length; with the GIL released it wakes throughout the call,
    which lasts tenths of a second on the serial backend. Not a speed assertion.
    """
    call = _long_calls(np.random.default_rng(0))[name]
    entered, done = threading.Event(), threading.Event()

    def worker():
        entered.set()
        call()
        done.set()

    with kernels.use_backend("serial", blas=False):  # slowest backend, native route: the longest call
        thread = threading.Thread(target=worker)
        thread.start()
        entered.wait()
        wakeups = 0
        while not done.is_set():
            time.sleep(0.001)
            wakeups += 1
        thread.join()
    assert wakeups >= 10, f"{name}: the main thread ran only {wakeups} times during the call (GIL held?)"


def test_concurrent_calls_are_correct():
    rng = np.random.default_rng(7)
    jobs = []
    for i in range(24):
        dim = [7, 33, 384][i % 3]
        q, r = random_rows(rng, 40, dim), random_rows(rng, 120, dim)
        offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 6, 40))]).astype(np.int64)
        offsets = np.minimum(offsets, 120)
        offsets[-1] = 120
        jobs.append((q, r, offsets, dim))

    def run(job):
        q, r, offsets, dim = job
        out = []
        for _ in range(20):
            out.append(
                (
                    kernels.cosine_reduce(q, r, offsets, reduce=("max", "mean"), clamp=(0.0, 1.0)),
                    kernels.cosine_matrix(q, r),
                    kernels.paired_cosine(q, r[:40]),
                )
            )
        return out

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, jobs))
    for (q, r, offsets, dim), runs in zip(jobs, results, strict=True):
        expect_max = ref.ragged(q, r, offsets, "max", (0.0, 1.0))
        expect_mean = ref.ragged(q, r, offsets, "mean", (0.0, 1.0))
        for (maxes, means), matrix, paired in runs:
            assert_close(maxes, expect_max, dim)
            assert_close(means, expect_mean, dim)
            assert_close(matrix, ref.cosine_matrix(q, r), dim)
            assert_close(paired, ref.paired_cosine(q, r[:40]), dim)


def test_kernel_thread_count_setting_changes_nothing_numerically():
    rng = np.random.default_rng(3)
    a, b = random_rows(rng, 5000, 384), random_rows(rng, 5000, 384)
    previous = kernels.get_num_threads()
    try:
        kernels.set_num_threads(1)
        one = kernels.paired_cosine(a, b)
        kernels.set_num_threads(4)
        four = kernels.paired_cosine(a, b)
    finally:
        kernels.set_num_threads(previous)
    np.testing.assert_array_equal(one, four)
    with pytest.raises(ValueError, match="between 1 and 64; got 0"):
        kernels.set_num_threads(0)
