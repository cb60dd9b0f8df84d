"""Cosine kernel speed: simkernel side by side with numpy, simsimd and sentence-transformers' torch cos_sim.

Three cases of issue 2, each one pytest-benchmark group, every peer computing the same numbers (each
benchmark checks its result against numpy before timing):

- ``1x8 d384 max+mean``: 1 output against 8 references, d=384: the cosines, their max and their mean,
  Python call included (the reference-match metric's inner step).
- ``10000 paired d384``: 10,000 row-wise cosines, d=384 (the SAS step).
- ``1024x1024 d768 max+mean``: a 1024 x 1024 cosine matrix at d=768, then the max and the mean of every row.

Peers: numpy (BLAS matmul / einsum, its own threads), simsimd (``cdist`` / ``cosine``; single-threaded
by default, as shipped), torch through ``sentence_transformers.util.cos_sim`` / ``pairwise_cos_sim`` on
tensors made beforehand. Versions are recorded in each benchmark's ``extra_info``.

    flock /tmp/simkernel-bench.lock /work/venvs/dev/bin/python -m pytest benchmarks/bench_kernels.py \\
        -p no:cacheprovider --benchmark-columns=min,median,mean,stddev,rounds --benchmark-group-by=group

Numpy's OpenBLAS is pinned to AVX2 on these machines (OPENBLAS_CORETYPE); it is left as it is.
"""

from __future__ import annotations

import numpy as np
import pytest

from simkernel import kernels

simsimd = pytest.importorskip(
    "simsimd", reason="the bench extra (simsimd) is needed: pip install -e '.[bench]'"
)

RNG = np.random.default_rng(2026)
PEERS = ["numpy", "simsimd", "torch", "simkernel"]


def _rows(n: int, d: int) -> np.ndarray:
    return RNG.standard_normal((n, d)).astype(np.float32)


def _torch():
    torch = pytest.importorskip("torch")
    from sentence_transformers import util

    return torch, util


def _versions() -> dict:
    import simkernel

    out = {
        "numpy": np.__version__,
        "simsimd": simsimd.__version__,
        "simkernel": simkernel.__version__,
        "simkernel_backend": kernels.capabilities()["backend"],
    }
    try:
        import torch

        out["torch"] = torch.__version__
    except ImportError:
        pass
    return out


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ---- case 1: 1 output x 8 references, d=384, max and mean ----

Q1, R1 = _rows(1, 384), _rows(8, 384)
OFFSETS1 = np.array([0, 8], np.int64)
EXPECT1 = ((_unit(R1) @ _unit(Q1)[0]).max(), (_unit(R1) @ _unit(Q1)[0]).mean())


def _small_case(peer: str):
    if peer == "numpy":

        def run():
            sims = _unit(R1) @ _unit(Q1)[0]
            return sims.max(), sims.mean()
    elif peer == "simsimd":

        def run():
            sims = 1.0 - np.asarray(simsimd.cosine(Q1[0], R1))
            return sims.max(), sims.mean()
    elif peer == "torch":
        torch, util = _torch()
        q, r = torch.from_numpy(Q1), torch.from_numpy(R1)

        def run():
            sims = util.cos_sim(q, r)
            return sims.max().item(), sims.mean().item()
    else:

        def run():
            maxes, means = kernels.cosine_reduce(Q1, R1, OFFSETS1, reduce=("max", "mean"))
            return maxes[0], means[0]

    return run


@pytest.mark.benchmark(group="1x8 d384 max+mean")
@pytest.mark.parametrize("peer", PEERS)
def test_small_reduce(benchmark, peer):
    run = _small_case(peer)
    np.testing.assert_allclose(run(), EXPECT1, atol=1e-5)
    benchmark.extra_info.update(_versions())
    benchmark(run)


# ---- case 2: 10,000 paired rows, d=384 ----

A2, B2 = _rows(10_000, 384), _rows(10_000, 384)
EXPECT2 = np.einsum("ij,ij->i", _unit(A2), _unit(B2))


def _paired_case(peer: str):
    if peer == "numpy":

        def run():
            return np.einsum("ij,ij->i", A2, B2) / (np.linalg.norm(A2, axis=1) * np.linalg.norm(B2, axis=1))
    elif peer == "simsimd":

        def run():
            return simsimd.cosine(
                A2, B2
            )  # distances (1 - cosine); the subtraction is left out, to its favour
    elif peer == "torch":
        torch, util = _torch()
        a, b = torch.from_numpy(A2), torch.from_numpy(B2)

        def run():
            return util.pairwise_cos_sim(a, b)
    else:

        def run():
            return kernels.paired_cosine(A2, B2)

    return run


@pytest.mark.benchmark(group="10000 paired d384")
@pytest.mark.parametrize("peer", PEERS)
def test_paired(benchmark, peer):
    run = _paired_case(peer)
    result = np.asarray(run(), dtype=np.float64)
    if peer == "simsimd":
        result = 1.0 - result
    np.testing.assert_allclose(result, EXPECT2, atol=1e-5)
    benchmark.extra_info.update(_versions())
    benchmark(run)


# ---- case 3: 1024 x 1024, d=768, then max and mean per row ----

A3, B3 = _rows(1024, 768), _rows(1024, 768)
_S3 = _unit(A3) @ _unit(B3).T
EXPECT3 = (_S3.max(axis=1), _S3.mean(axis=1))


def _matrix_case(peer: str):
    if peer == "numpy":

        def run():
            sims = _unit(A3) @ _unit(B3).T
            return sims.max(axis=1), sims.mean(axis=1)
    elif peer == "simsimd":

        def run():
            sims = 1.0 - np.asarray(simsimd.cdist(A3, B3, metric="cosine"))
            return sims.max(axis=1), sims.mean(axis=1)
    elif peer == "torch":
        torch, util = _torch()
        a, b = torch.from_numpy(A3), torch.from_numpy(B3)

        def run():
            sims = util.cos_sim(a, b)
            return sims.max(dim=1).values, sims.mean(dim=1)
    else:

        def run():
            return kernels.cosine_reduce(A3, B3, reduce=("max", "mean"))

    return run


@pytest.mark.benchmark(group="1024x1024 d768 max+mean")
@pytest.mark.parametrize("peer", PEERS)
def test_matrix_reduce(benchmark, peer):
    run = _matrix_case(peer)
    maxes, means = run()
    np.testing.assert_allclose(np.asarray(maxes, np.float64), EXPECT3[0], atol=1e-5)
    np.testing.assert_allclose(np.asarray(means, np.float64), EXPECT3[1], atol=1e-5)
    benchmark.extra_info.update(_versions())
    benchmark(run)
