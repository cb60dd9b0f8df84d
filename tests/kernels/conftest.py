"""Fixtures of the kernel tests: every backend this CPU runs, forced in turn, on both routes."""

from __future__ import annotations

import numpy as np
import pytest

from simkernel import kernels


@pytest.fixture(params=kernels.available_backends())
def backend(request) -> str:
    """Forces each backend the CPU supports (serial, haswell, skylake / neon) for the test's duration."""
    with kernels.use_backend(request.param) as name:
        assert kernels.capabilities()["backend"] == name == request.param
        yield name


@pytest.fixture(params=["native", "blas"])
def route(request, backend) -> str:
    """Forces the native or the BLAS route of cosine_matrix and dense cosine_reduce (on top of `backend`)."""
    with kernels.use_backend(backend, blas=request.param == "blas"):
        yield request.param


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)
