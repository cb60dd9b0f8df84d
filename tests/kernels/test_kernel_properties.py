"""Property tests (hypothesis): symmetry, bounds, scale invariance, agreement between the functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from kernel_reference import tolerance

from simkernel import kernels

# finite float32 values of moderate magnitude (squares far from overflow), many exact zeros and repeats
ELEMENTS = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, width=32)


ROWS, DIM = st.integers(0, 9), st.integers(1, 70)


@st.composite
def matrices(draw, rows=ROWS, dim=DIM):
    d = draw(dim)
    a = draw(arrays(np.float32, (draw(rows), d), elements=ELEMENTS))
    b = draw(arrays(np.float32, (draw(rows), d), elements=ELEMENTS))
    return a, b


@st.composite
def ragged_groups(draw):
    a, refs = draw(matrices(rows=st.integers(0, 12)))
    n = a.shape[0]
    cuts = sorted(
        draw(st.lists(st.integers(0, refs.shape[0]), min_size=max(n - 1, 0), max_size=max(n - 1, 0)))
    )
    offsets = np.array(([0] + cuts + [refs.shape[0]]) if n else [0], np.int64)
    if n == 0:
        refs = refs[:0]
    return a, refs, offsets


BACKENDS = kernels.available_backends()
SETTINGS = settings(max_examples=60, deadline=None)


@pytest.mark.parametrize("backend_name", BACKENDS)
@SETTINGS
@given(data=matrices())
def test_symmetry_and_bounds(backend_name, data):
    a, b = data
    d = a.shape[1]
    with kernels.use_backend(backend_name):
        ab, ba = kernels.cosine_matrix(a, b), kernels.cosine_matrix(b, a)
    np.testing.assert_allclose(ab, ba.T, atol=tolerance(d))
    assert np.all(np.abs(ab) <= 1.0 + tolerance(d))


@pytest.mark.parametrize("backend_name", BACKENDS)
@SETTINGS
@given(data=matrices(), scale=st.floats(1e-3, 1e3))
def test_scale_invariance_and_normalize(backend_name, data, scale):
    a, b = data
    d = a.shape[1]
    # scaling must not push a value into float32's subnormal range (that loses the value itself)
    nonzero = np.abs(a[a != 0]).astype(np.float64)
    assume(bool((nonzero * scale >= np.finfo(np.float32).tiny).all()) and bool((nonzero >= 1e-30).all()))
    with kernels.use_backend(backend_name):
        np.testing.assert_allclose(
            kernels.cosine_matrix(a * np.float32(scale), b),
            kernels.cosine_matrix(a, b),
            atol=2 * tolerance(d),
        )
        # normalising first changes nothing, and normalised rows are unit (or zero) vectors
        na = kernels.normalize(a)
        np.testing.assert_allclose(
            kernels.cosine_matrix(na, b), kernels.cosine_matrix(a, b), atol=2 * tolerance(d)
        )
        norms = np.linalg.norm(na.astype(np.float64), axis=1)
        zero = ~a.any(axis=1)
        np.testing.assert_allclose(norms[~zero], 1.0, atol=1e-5)
        assert np.all(norms[zero] == 0.0)


@pytest.mark.parametrize("backend_name", BACKENDS)
@SETTINGS
@given(data=matrices())
def test_paired_is_the_matrix_diagonal(backend_name, data):
    a, b = data
    n = min(a.shape[0], b.shape[0])
    a, b = a[:n], b[:n]
    with kernels.use_backend(backend_name):
        np.testing.assert_allclose(
            kernels.paired_cosine(a, b), np.diagonal(kernels.cosine_matrix(a, b)), atol=tolerance(a.shape[1])
        )


@pytest.mark.parametrize("backend_name", BACKENDS)
@SETTINGS
@given(data=ragged_groups(), clamp=st.none() | st.tuples(st.floats(-1, 0), st.floats(0, 1)))
def test_reduce_agrees_with_matrix(backend_name, data, clamp):
    queries, refs, offsets = data
    d = queries.shape[1]
    with kernels.use_backend(backend_name):
        maxes, means = kernels.cosine_reduce(queries, refs, offsets, reduce=("max", "mean"), clamp=clamp)
        dense_max, dense_mean = kernels.cosine_reduce(queries, refs, reduce=("max", "mean"), clamp=clamp)
        matrix = kernels.cosine_matrix(queries, refs).astype(np.float64)
    if clamp is not None:
        matrix = np.clip(matrix, *clamp)
    for i in range(queries.shape[0]):
        group = matrix[i, offsets[i] : offsets[i + 1]]
        expect_max = group.max() if group.size else 0.0
        expect_mean = group.mean() if group.size else 0.0
        assert abs(maxes[i] - expect_max) <= tolerance(d)
        assert abs(means[i] - expect_mean) <= tolerance(d)
        if clamp is not None and group.size:
            assert clamp[0] - 1e-7 <= maxes[i] <= clamp[1] + 1e-7
    if refs.shape[0]:
        np.testing.assert_allclose(dense_max, matrix.max(axis=1), atol=tolerance(d))
        np.testing.assert_allclose(dense_mean, matrix.mean(axis=1), atol=tolerance(d))
