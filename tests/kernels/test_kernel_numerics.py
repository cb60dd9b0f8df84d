"""Every kernel against the float64 numpy reference, every backend, the odd dimensions SIMD tails hit."""

from __future__ import annotations

import kernel_reference as ref
import numpy as np
import pytest
from kernel_reference import DIMS, assert_close, random_rows

from simkernel import kernels

KINDS = ["normal", "positive", "scaled"]


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("kind", KINDS)
def test_normalize(backend, rng, dim, kind):
    x = random_rows(rng, 9, dim, kind)
    out = kernels.normalize(x)
    assert_close(out, ref.normalize(x), dim)
    np.testing.assert_allclose(np.linalg.norm(out.astype(np.float64), axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("kind", KINDS)
def test_paired_cosine(backend, rng, dim, kind):
    a, b = random_rows(rng, 11, dim, kind), random_rows(rng, 11, dim, kind)
    assert_close(kernels.paired_cosine(a, b), ref.paired_cosine(a, b), dim)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("kind", KINDS)
def test_cosine_matrix(backend, route, rng, dim, kind):
    # 7 x 13 exercises the 4-wide blocks and their remainder on the native route
    a, b = random_rows(rng, 7, dim, kind), random_rows(rng, 13, dim, kind)
    assert_close(kernels.cosine_matrix(a, b), ref.cosine_matrix(a, b), dim)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("clamp", [None, (0.0, 1.0), (-0.05, 0.05)])
def test_cosine_reduce_ragged_with_empty_groups(backend, rng, dim, clamp):
    sizes = [3, 0, 1, 8, 0, 0, 5, 2, 0]  # empty groups at the start, middle and end
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    queries = random_rows(rng, len(sizes), dim, "positive" if clamp == (0.0, 1.0) else "normal")
    refs = random_rows(rng, int(offsets[-1]), dim, "normal")
    for how in ("max", "mean"):
        expected = ref.ragged(queries, refs, offsets, how, clamp)
        assert_close(kernels.cosine_reduce(queries, refs, offsets, reduce=how, clamp=clamp), expected, dim)
        assert all(expected[i] == 0.0 for i, size in enumerate(sizes) if size == 0)
    both = kernels.cosine_reduce(queries, refs, offsets, reduce=("max", "mean"), clamp=clamp)
    assert_close(both[0], ref.ragged(queries, refs, offsets, "max", clamp), dim)
    assert_close(both[1], ref.ragged(queries, refs, offsets, "mean", clamp), dim)
    flipped = kernels.cosine_reduce(queries, refs, offsets, reduce=["mean", "max"], clamp=clamp)
    np.testing.assert_array_equal(flipped[0], both[1])
    np.testing.assert_array_equal(flipped[1], both[0])


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("n_refs", [0, 1, 5, 70])  # 70 > the native route's block of 64 similarities
@pytest.mark.parametrize("clamp", [None, (0.0, 1.0)])
def test_cosine_reduce_dense(backend, route, rng, dim, n_refs, clamp):
    queries, refs = random_rows(rng, 6, dim, "normal"), random_rows(rng, n_refs, dim, "normal")
    maxes, means = kernels.cosine_reduce(queries, refs, reduce=("max", "mean"), clamp=clamp)
    assert_close(maxes, ref.dense(queries, refs, "max", clamp), dim)
    assert_close(means, ref.dense(queries, refs, "mean", clamp), dim)


def test_blas_route_in_several_blocks(backend, rng):
    """The dense BLAS route reduces 2**22 similarities at a time: 1100 x 4000 takes two blocks."""
    queries, refs = random_rows(rng, 1100, 5, "normal"), random_rows(rng, 4000, 5, "normal")
    with kernels.use_backend(backend, blas=True):
        maxes, means = kernels.cosine_reduce(queries, refs, reduce=("max", "mean"), clamp=(-0.5, 0.5))
    assert_close(maxes, ref.dense(queries, refs, "max", (-0.5, 0.5)), 5)
    assert_close(means, ref.dense(queries, refs, "mean", (-0.5, 0.5)), 5)


@pytest.mark.parametrize("dim", [1, 17, 384])
def test_zero_rows_give_zero(backend, route, rng, dim):
    a, b = random_rows(rng, 5, dim), random_rows(rng, 5, dim)
    a[1] = 0.0
    b[3] = 0.0
    b[1] = 0.0
    np.testing.assert_array_equal(kernels.normalize(a)[1], np.zeros(dim, np.float32))
    paired = kernels.paired_cosine(a, b)
    assert paired[1] == 0.0 and paired[3] == 0.0
    matrix = kernels.cosine_matrix(a, b)
    assert (matrix[1] == 0.0).all() and (matrix[:, 3] == 0.0).all() and (matrix[:, 1] == 0.0).all()
    assert_close(matrix, ref.cosine_matrix(a, b), dim)
    offsets = np.array([0, 1, 2, 3, 4, 5], np.int64)
    assert kernels.cosine_reduce(a, b, offsets, reduce="max")[1] == 0.0
    assert kernels.cosine_reduce(a, b, offsets, reduce="mean")[3] == 0.0
    # clamping a 0.0 similarity to [0.2, 1] gives 0.2: zero-norm gives similarity 0.0, then the clamp applies
    assert kernels.cosine_reduce(a, b, offsets, reduce="mean", clamp=(0.2, 1.0))[3] == np.float32(0.2)


@pytest.mark.parametrize("dim", [1, 16, 17, 384])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_overflow_propagate(backend, route, rng, dim, bad):
    a, b = random_rows(rng, 4, dim), random_rows(rng, 6, dim)
    a[2, dim // 2] = bad
    b[4, 0] = bad
    assert np.isnan(kernels.normalize(a)[2]).all()
    assert not np.isnan(kernels.normalize(a)[[0, 1, 3]]).any()
    paired = kernels.paired_cosine(a, b[:4])
    assert np.isnan(paired[2]) and not np.isnan(paired[[0, 1, 3]]).any()
    matrix = kernels.cosine_matrix(a, b)
    expected_nan = np.zeros_like(matrix, dtype=bool)
    expected_nan[2, :] = True
    expected_nan[:, 4] = True
    np.testing.assert_array_equal(np.isnan(matrix), expected_nan)
    # query 1's group holds the NaN ref 4, query 2 is NaN itself, query 3's group is empty (0.0 regardless)
    offsets = np.array([0, 2, 5, 6, 6], np.int64)
    for how in ("max", "mean"):
        out = kernels.cosine_reduce(a, b, offsets, reduce=how, clamp=(0.0, 1.0))
        np.testing.assert_array_equal(np.isnan(out), [False, True, True, False])
        assert out[3] == 0.0
        dense = kernels.cosine_reduce(a, b, reduce=how)
        assert np.isnan(dense).all()  # every query meets ref 4


@pytest.mark.parametrize("dim", [1, 3, 16, 17, 384])
@pytest.mark.parametrize("magnitude", [1e-30, 1e-20, 1e-17, 1e17, 1e20, 1e30, 1e37])
def test_tiny_and_huge_rows_are_exact(backend, route, rng, dim, magnitude):
    """float32 squares underflow below ~1e-19 and overflow above ~1e19: those rows are redone in float64."""
    a, b = random_rows(rng, 5, dim), random_rows(rng, 6, dim)
    a[1] *= np.float32(magnitude)
    b[2] *= np.float32(magnitude)
    a[3] = np.float32(magnitude)  # every element extreme
    b[4, :] = 0.0
    b[4, 0] = np.float32(magnitude)  # one extreme element
    assert np.isfinite(a).all() and np.isfinite(b).all()
    assert_close(kernels.normalize(a), ref.normalize(a), dim)
    assert_close(kernels.paired_cosine(a, b[:5]), ref.paired_cosine(a, b[:5]), dim)
    assert_close(kernels.cosine_matrix(a, b), ref.cosine_matrix(a, b), dim)
    offsets = np.array([0, 1, 3, 3, 5, 6], np.int64)
    assert_close(kernels.cosine_reduce(a, b, offsets, reduce="mean"), ref.ragged(a, b, offsets, "mean"), dim)
    assert_close(kernels.cosine_reduce(a, b, reduce="max"), ref.dense(a, b, "max"), dim)


def test_nan_row_against_zero_row_is_nan(backend):
    a = np.array([[np.nan, 1.0]], np.float32)
    b = np.zeros((1, 2), np.float32)
    assert np.isnan(kernels.paired_cosine(a, b)[0])
    assert np.isnan(kernels.cosine_matrix(a, b)[0, 0])


def test_no_clamping_unless_asked(backend):
    """Identical and opposite rows come out at +-1 within tolerance; nothing forces them into [-1, 1]."""
    x = random_rows(np.random.default_rng(1), 64, 97)
    same = kernels.paired_cosine(x, x)
    opposite = kernels.paired_cosine(x, -x)
    np.testing.assert_allclose(same, 1.0, atol=ref.tolerance(97))
    np.testing.assert_allclose(opposite, -1.0, atol=ref.tolerance(97))
    clamped = kernels.cosine_reduce(x, x, np.arange(65, dtype=np.int64), reduce="max", clamp=(0.0, 0.5))
    np.testing.assert_array_equal(clamped, np.float32(0.5))


@pytest.mark.parametrize("fn", ["normalize", "paired", "matrix", "ragged", "dense"])
def test_empty_inputs(backend, fn):
    empty = np.zeros((0, 8), np.float32)
    if fn == "normalize":
        assert kernels.normalize(empty).shape == (0, 8)
    elif fn == "paired":
        assert kernels.paired_cosine(empty, empty).shape == (0,)
    elif fn == "matrix":
        assert kernels.cosine_matrix(empty, np.ones((3, 8), np.float32)).shape == (0, 3)
        assert kernels.cosine_matrix(np.ones((3, 8), np.float32), empty).shape == (3, 0)
    elif fn == "ragged":
        assert kernels.cosine_reduce(empty, empty, np.zeros(1, np.int64)).shape == (0,)
        out = kernels.cosine_reduce(np.ones((2, 8), np.float32), empty, np.zeros(3, np.int64), reduce="mean")
        np.testing.assert_array_equal(out, [0.0, 0.0])
    else:
        np.testing.assert_array_equal(kernels.cosine_reduce(np.ones((2, 8), np.float32), empty), [0.0, 0.0])


def test_zero_dimension_vectors_are_zero_norm(backend):
    a = np.zeros((2, 0), np.float32)
    np.testing.assert_array_equal(kernels.paired_cosine(a, a), [0.0, 0.0])
    np.testing.assert_array_equal(kernels.cosine_matrix(a, a), np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("n", [1, 3, 2500])  # 2500 x 384 is large enough to be split over threads
def test_large_calls_split_over_threads_match(backend, rng, n):
    a, b = random_rows(rng, n, 384), random_rows(rng, n, 384)
    assert_close(kernels.paired_cosine(a, b), ref.paired_cosine(a, b), 384)
    assert_close(kernels.normalize(a), ref.normalize(a), 384)
    sizes = rng.integers(0, 5, size=n)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    refs = random_rows(rng, int(offsets[-1]), 384)
    assert_close(
        kernels.cosine_reduce(a, refs, offsets, reduce="mean"), ref.ragged(a, refs, offsets, "mean"), 384
    )


def test_backends_agree_closely(rng):
    """Every backend gives the same answers within twice the stated tolerance of the reference."""
    a, b = random_rows(rng, 20, 385), random_rows(rng, 30, 385)
    results = {}
    for name in kernels.available_backends():
        with kernels.use_backend(name, blas=False):
            results[name] = kernels.cosine_matrix(a, b)
    serial = results["serial"]
    for name, res in results.items():
        np.testing.assert_allclose(res, serial, atol=2 * ref.tolerance(385), err_msg=name)
