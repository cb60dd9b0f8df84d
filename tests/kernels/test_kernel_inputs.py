"""Input forms (dtype, order, strides, read-only, lists, memmaps) and every bad argument."""

from __future__ import annotations

import re

import kernel_reference as ref
import numpy as np
import pytest
from kernel_reference import assert_close, random_rows

from simkernel import kernels


def _variants(x: np.ndarray) -> dict[str, np.ndarray]:
    """The same values as float64, Fortran order, a strided view, a read-only view, big-endian, a list."""
    readonly = x.copy()
    readonly.setflags(write=False)
    wide = np.zeros((x.shape[0] * 2, x.shape[1] * 3), np.float32)
    wide[::2, ::3] = x
    return {
        "float64": x.astype(np.float64),
        "fortran": np.asfortranarray(x),
        "strided": wide[::2, ::3],
        "readonly": readonly,
        "bigendian": x.astype(">f4"),
        "list": x.tolist(),
        "negative_stride": x[::-1][::-1] if x.shape[0] < 2 else np.ascontiguousarray(x[::-1])[::-1],
    }


@pytest.mark.parametrize("variant", list(_variants(np.zeros((2, 2), np.float32))))
def test_every_function_accepts_layout_variants(backend, rng, variant):
    a, b = random_rows(rng, 6, 33), random_rows(rng, 6, 33)
    offsets = np.array([0, 1, 1, 3, 6, 6, 6], np.int64)
    va, vb = _variants(a)[variant], _variants(b)[variant]
    before_a = np.array(va, copy=True)
    assert_close(kernels.normalize(va), ref.normalize(a), 33)
    assert_close(kernels.paired_cosine(va, vb), ref.paired_cosine(a, b), 33)
    assert_close(kernels.cosine_matrix(va, vb), ref.cosine_matrix(a, b), 33)
    assert_close(kernels.cosine_reduce(va, vb, offsets, reduce="mean"), ref.ragged(a, b, offsets, "mean"), 33)
    assert_close(kernels.cosine_reduce(va, vb, reduce="max"), ref.dense(a, b, "max"), 33)
    np.testing.assert_array_equal(np.asarray(va), before_a)  # nothing the user gave is modified


def test_read_only_memmap(tmp_path, backend, rng):
    a = random_rows(rng, 5, 64)
    path = tmp_path / "a.npy"
    np.save(path, a)
    mm = np.load(path, mmap_mode="r")
    assert not mm.flags.writeable
    assert_close(kernels.cosine_matrix(mm, mm), ref.cosine_matrix(a, a), 64)
    assert_close(
        kernels.cosine_reduce(mm, mm, np.array([0, 5, 5, 5, 5, 5], np.int64)),
        ref.ragged(a, a, np.array([0, 5, 5, 5, 5, 5]), "max"),
        64,
    )


def test_offsets_of_other_integer_types_and_lists(rng):
    q, r = random_rows(rng, 3, 8), random_rows(rng, 4, 8)
    expected = ref.ragged(q, r, np.array([0, 2, 2, 4]), "max")
    for offsets in (
        [0, 2, 2, 4],
        np.array([0, 2, 2, 4], np.int32),
        np.array([0, 2, 2, 4], np.uint64),
        np.array([0, 0, 2, 0, 2, 0, 4, 0], np.int64)[::2],
    ):
        assert_close(kernels.cosine_reduce(q, r, offsets), expected, 8)


def test_float64_results_are_float32():
    x = np.random.default_rng(0).standard_normal((3, 5))
    assert kernels.normalize(x).dtype == np.float32
    assert kernels.paired_cosine(x, x).dtype == np.float32


# ---- bad input: every error names the value and the expected form, and no native code runs ----

GOOD = np.ones((3, 4), np.float32)


@pytest.mark.parametrize(
    "dtype", [np.int64, np.int32, np.float16, np.bool_, np.complex64, np.uint8, object, "U3"]
)
def test_other_dtypes_are_type_errors(dtype):
    bad = np.ones((3, 4), dtype=dtype)
    calls = [
        lambda: kernels.normalize(bad),
        lambda: kernels.paired_cosine(bad, GOOD),
        lambda: kernels.paired_cosine(GOOD, bad),
        lambda: kernels.cosine_matrix(GOOD, bad),
        lambda: kernels.cosine_reduce(bad, GOOD, [0, 1, 2, 3]),
        lambda: kernels.cosine_reduce(GOOD, bad),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=r"dtype .*expected float32"):
            call()


@pytest.mark.parametrize("shape", [(4,), (), (2, 3, 4)])
def test_wrong_ndim_is_value_error(shape):
    bad = np.ones(shape, np.float32)
    with pytest.raises(ValueError, match=re.escape(f"got {len(shape)}-D shape {shape}")):
        kernels.normalize(bad)
    with pytest.raises(ValueError, match=r"must be 2-D"):
        kernels.cosine_matrix(GOOD, bad)
    with pytest.raises(ValueError, match=r"queries must be 2-D"):
        kernels.cosine_reduce(bad, GOOD)


def test_none_and_ragged_lists():
    with pytest.raises(TypeError, match="got None"):
        kernels.normalize(None)
    with pytest.raises(ValueError, match="could not read it as an array"):
        kernels.cosine_matrix([[1.0, 2.0], [1.0]], GOOD)


def test_dimension_mismatch_names_both_shapes():
    other = np.ones((3, 5), np.float32)
    with pytest.raises(ValueError, match=re.escape("got a (3, 4) and b (3, 5)")):
        kernels.cosine_matrix(GOOD, other)
    with pytest.raises(ValueError, match="same number of columns"):
        kernels.paired_cosine(GOOD, other)
    with pytest.raises(ValueError, match=re.escape("got queries (3, 4) and refs (3, 5)")):
        kernels.cosine_reduce(GOOD, other, [0, 1, 2, 3])


def test_paired_row_mismatch():
    with pytest.raises(ValueError, match=re.escape("got a (3, 4) and b (2, 4)")):
        kernels.paired_cosine(GOOD, GOOD[:2])


@pytest.mark.parametrize(
    ("offsets", "error", "message"),
    [
        ([1, 2, 3, 3], ValueError, r"offsets\[0\] is 1; expected 0"),
        ([0, 2, 1, 3], ValueError, r"offsets\[2\] is 1, less than offsets\[1\] = 2"),
        ([0, 1, 2, 2], ValueError, r"offsets\[3\] \(the last\) is 2; expected len\(refs\) = 3"),
        ([0, 1, 5, 3], ValueError, r"offsets\[2\] is 5, beyond len\(refs\) = 3"),
        ([0, -1, 2, 3], ValueError, r"offsets\[1\] is -1, less than offsets\[0\] = 0"),
        ([0, 1, 3], ValueError, r"length len\(queries\) \+ 1 = 4; got shape \(3,\)"),
        ([[0, 1, 2, 3]], ValueError, r"length len\(queries\) \+ 1 = 4; got shape \(1, 4\)"),
        ([0.0, 1.0, 2.0, 3.0], TypeError, r"offsets has dtype float64; expected int64"),
        (["0", "1", "2", "3"], TypeError, r"offsets has dtype <U1; expected int64"),
        (np.array([0, 1, 2, 2**63 + 5], np.uint64), ValueError, r"does not fit in int64"),
    ],
)
def test_bad_offsets(offsets, error, message):
    with pytest.raises(error, match=message):
        kernels.cosine_reduce(GOOD, GOOD, offsets)


@pytest.mark.parametrize(
    "clamp", [(1.0, 0.0), (float("nan"), 1.0), (0.0,), (0.0, 1.0, 2.0), "01", 0.5, ("a", 1.0), {0: 1}]
)
def test_bad_clamp(clamp):
    with pytest.raises(ValueError, match=r"clamp must"):
        kernels.cosine_reduce(GOOD, GOOD, reduce="max", clamp=clamp)


def test_clamp_accepts_lists_numpy_scalars_and_ints(rng):
    q, r = random_rows(rng, 2, 16), random_rows(rng, 5, 16)
    expected = ref.dense(q, r, "mean", (0.0, 1.0))
    for clamp in ([0, 1], (np.float32(0), np.float64(1)), (0, 1), np.array([0.0, 1.0])):
        assert_close(kernels.cosine_reduce(q, r, reduce="mean", clamp=clamp), expected, 16)


@pytest.mark.parametrize(
    "reduce", ["min", "MAX", "", None, 3, (), ("max", "sum"), "max,mean", np.array(["max", "mean"])]
)
def test_bad_reduce(reduce):
    with pytest.raises(ValueError, match=r"reduce must be 'max', 'mean' or a sequence of them"):
        kernels.cosine_reduce(GOOD, GOOD, reduce=reduce)


def test_bad_backend_names():
    with pytest.raises(ValueError, match=r"unknown kernel backend 'avx9000'.*'serial'"):
        kernels.set_backend("avx9000")
    with pytest.raises(TypeError, match="backend name must be a str"):
        kernels.set_backend(3)
    compiled_only = [b for b in kernels.capabilities()["compiled"] if b not in kernels.available_backends()]
    for name in compiled_only:
        with pytest.raises(ValueError, match="not supported by this CPU"):
            kernels.set_backend(name)
