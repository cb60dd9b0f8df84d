"""Fuzzing the kernel's public functions with arbitrary arguments (hypothesis, 3,000 cases per run).

Arguments are arrays of any dtype (float16/32/64 of either byte order, ints, bools, complex, strings,
objects), any number of dimensions including empty ones, NaN and infinities, and non-arrays (None,
strings, numbers, ragged lists). The contract: a float32 result equal to the float64 numpy reference
(NaN exactly where a row holds NaN or infinity), or a TypeError / ValueError whose message names the
argument at fault; never a crash, never another exception.
"""

from __future__ import annotations

import re

import kernel_reference as ref
import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tests.fuzz_settings import fuzz

from simkernel import kernels

FLOAT_DTYPES = [np.dtype("<f4"), np.dtype(">f4"), np.dtype("<f8"), np.dtype(">f8")]
OTHER_DTYPES = [np.dtype(t) for t in ("f2", "i4", "i8", "u1", "?", "c8", "U3", "O")]
VALUES = st.floats(-1e6, 1e6, width=32) | st.sampled_from([0.0, np.nan, np.inf, -np.inf, 1e-30])


def float_arrays() -> st.SearchStrategy[np.ndarray]:
    shape = st.tuples(st.integers(0, 5), st.integers(1, 40))
    return st.builds(
        lambda dtype, a: a.astype(dtype),
        st.sampled_from(FLOAT_DTYPES),
        hnp.arrays(np.float64, shape, elements=VALUES),
    )


def other_arrays() -> st.SearchStrategy[np.ndarray]:
    def build(dtype, shape):
        if dtype.kind in "UO":
            return np.full(shape, "ab", dtype=dtype)
        return np.ones(shape, dtype=dtype)

    return st.builds(
        build, st.sampled_from(OTHER_DTYPES), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0)
    )


NON_ARRAYS = st.sampled_from([None, "abc", 3, 2.5, [[1.0, 2.0], [3.0]], [["a", "b"]], {"a": 1}, b"\x00"])
WRONG_NDIM = hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=4).filter(lambda s: len(s) != 2))
ANY_MATRIX = st.one_of(float_arrays(), float_arrays(), other_arrays(), NON_ARRAYS, WRONG_NDIM)


def is_float_matrix(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.dtype.itemsize in (4, 8) and x.ndim == 2


def expect_error(call, *names: str) -> None:
    """``call`` raises TypeError/ValueError naming one of ``names`` (the argument at fault)."""
    event("rejected")
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    message = str(info.value)
    assert any(re.search(rf"\b{re.escape(n)}\b", message) for n in names), message


def as32(x: np.ndarray) -> np.ndarray:
    """The values the kernel computes with (float64 input is converted to float32 first)."""
    return np.asarray(x, dtype=np.float32)


@fuzz(400)
@given(x=ANY_MATRIX)
def test_normalize(x):
    if not is_float_matrix(x):
        return expect_error(lambda: kernels.normalize(x), "x")
    event("computed")
    before = x.copy()
    ref.assert_close(kernels.normalize(x), ref.normalize(as32(x)), x.shape[1])
    np.testing.assert_array_equal(x, before)  # the input is never modified


@fuzz(600)
@given(a=ANY_MATRIX, b=ANY_MATRIX, same=st.booleans())
def test_paired_cosine(a, b, same):
    if same and is_float_matrix(a):
        b = a[::-1]
    if not (is_float_matrix(a) and is_float_matrix(b)):
        return expect_error(lambda: kernels.paired_cosine(a, b), "a", "b")
    if a.shape != b.shape:
        return expect_error(lambda: kernels.paired_cosine(a, b), "a", "b")
    event("computed")
    ref.assert_close(kernels.paired_cosine(a, b), ref.paired_cosine(as32(a), as32(b)), a.shape[1])


@fuzz(600)
@given(a=ANY_MATRIX, b=ANY_MATRIX, same_dim=st.booleans())
def test_cosine_matrix(a, b, same_dim):
    if same_dim and is_float_matrix(a) and is_float_matrix(b) and b.shape[1] != a.shape[1]:
        b = np.resize(b, (b.shape[0], a.shape[1])).astype(b.dtype)
    if not (is_float_matrix(a) and is_float_matrix(b)) or a.shape[1] != b.shape[1]:
        return expect_error(lambda: kernels.cosine_matrix(a, b), "a", "b")
    event("computed")
    ref.assert_close(kernels.cosine_matrix(a, b), ref.cosine_matrix(as32(a), as32(b)), a.shape[1])


OFFSETS = st.one_of(
    st.none(),
    st.lists(st.integers(-3, 12), max_size=8).map(lambda v: np.asarray(v, dtype=np.int64)),
    st.lists(st.integers(0, 12), max_size=8).map(sorted).map(lambda v: np.asarray([0, *v], dtype=np.int64)),
    st.sampled_from(["max", 1.5, [[0, 1]], np.zeros(3, np.float32), np.zeros((2, 2), np.int64)]),
)
CLAMP = st.one_of(
    st.none(),
    st.none(),
    st.tuples(st.floats(-2, 2), st.floats(-2, 2)),
    st.sampled_from([(0.0, 1.0), (1.0, 0.0), (np.nan, 1.0), "ab", (0.0,), (0.0, "x"), 5]),
)
REDUCE = st.sampled_from(["max", "mean", ("max", "mean"), ("mean",)]) | st.sampled_from(
    ["min", (), ["max", "sum"], None, 3]
)


def offsets_valid(offsets, n_queries: int, n_refs: int) -> bool:
    o = np.asarray(offsets)
    return (
        o.dtype.kind in "iu"
        and o.ndim == 1
        and o.shape[0] == n_queries + 1
        and (o.size == 0 or (o[0] == 0 and o[-1] == n_refs and bool(np.all(np.diff(o) >= 0))))
    )


@fuzz(900)
@given(
    queries=float_arrays() | ANY_MATRIX,
    refs=float_arrays() | ANY_MATRIX,
    offsets=OFFSETS,
    reduce=REDUCE,
    clamp=CLAMP,
    fit=st.booleans(),
)
def test_cosine_reduce(queries, refs, offsets, reduce, clamp, fit):
    if fit and is_float_matrix(queries) and is_float_matrix(refs):
        refs = np.resize(refs, (refs.shape[0], queries.shape[1])).astype(refs.dtype)
        if isinstance(offsets, np.ndarray) and offsets.ndim == 1 and offsets.dtype.kind == "i":
            cuts = np.sort(np.resize(offsets, len(queries) + 1).clip(0, len(refs)))
            offsets = (
                np.concatenate([[0], cuts[1:-1], [len(refs)]]) if len(queries) else np.zeros(1, np.int64)
            )

    def call():
        return kernels.cosine_reduce(queries, refs, offsets, reduce=reduce, clamp=clamp)

    # every argument at fault (the order of the checks is the kernel's business: any of them may be named)
    faults = []
    matrices = is_float_matrix(queries) and is_float_matrix(refs) and queries.shape[1] == refs.shape[1]
    if not matrices:
        faults += ["queries", "refs"]
    if offsets is not None and (not matrices or not offsets_valid(offsets, len(queries), len(refs))):
        faults.append("offsets")
    names = (reduce,) if isinstance(reduce, str) else reduce
    if not isinstance(names, (tuple, list)) or not names or any(n not in ("max", "mean") for n in names):
        faults.append("reduce")
    ok_clamp = clamp is None or (
        isinstance(clamp, tuple)
        and len(clamp) == 2
        and all(isinstance(v, float) for v in clamp)
        and not np.isnan(clamp).any()
        and clamp[0] <= clamp[1]
    )
    if not ok_clamp:
        faults.append("clamp")
    if not matrices or faults:
        return expect_error(call, *faults)
    event("computed")
    result = call()
    q, r = as32(queries), as32(refs)
    for name, got in zip(names, (result,) if isinstance(reduce, str) else result, strict=True):
        if offsets is None:
            expected = ref.dense(q, r, name, clamp)
        else:
            expected = ref.ragged(q, r, np.asarray(offsets), name, clamp)
        ref.assert_close(got, expected, q.shape[1])


SEGMENTS = st.one_of(
    st.lists(st.integers(-2, 12), max_size=6).map(lambda v: np.asarray(v, dtype=np.int64)),
    st.lists(st.integers(0, 12), max_size=5).map(sorted).map(lambda v: np.asarray([0, *v], dtype=np.int64)),
    st.sampled_from([None, "ab", 1.5, [[0, 1]], np.zeros(2, np.float32), np.zeros(0, np.int64)]),
)
PAIRS = st.one_of(
    st.none(),
    st.lists(st.tuples(st.integers(-1, 5), st.integers(-1, 5)), max_size=6).map(
        lambda v: np.asarray(v, dtype=np.int64).reshape(-1, 2)
    ),
    st.sampled_from([[[0, 1, 2]], np.zeros((1, 2), np.float64), "ab", [0, 1], np.zeros((2, 2), np.int32)]),
)
WEIGHTS = st.one_of(
    st.none(),
    st.just("fit"),
    st.just("fit"),
    hnp.arrays(np.float32, st.integers(0, 6), elements=st.floats(0, 10, width=32)),
    st.sampled_from(["w", np.ones(3, np.int64), np.ones((2, 2), np.float32), [1.0, "x"]]),
)


def segments_valid(offsets, n_rows: int) -> bool:
    o = np.asarray(offsets) if offsets is not None else np.zeros((0, 0))
    return (
        o.dtype.kind in "iu"
        and o.ndim == 1
        and o.shape[0] >= 1
        and o[0] == 0
        and o[-1] == n_rows
        and bool(np.all(np.diff(o) >= 0))
    )


def fit_segments(offsets, n_rows: int) -> np.ndarray:
    """Valid offsets for n_rows rows, cut where the drawn values say (or one segment of every row)."""
    if not (isinstance(offsets, np.ndarray) and offsets.ndim == 1 and offsets.dtype.kind == "i"):
        return np.array([0, n_rows], np.int64)
    cuts = np.sort(offsets.clip(0, n_rows))
    return np.concatenate([[0], cuts[1:], [n_rows]]).astype(np.int64)


def fit_pairs(pairs, n_cand: int, n_ref: int):
    """Drawn int64 pairs wrapped into range (None stays None when the counts allow it)."""
    if pairs is None and n_cand == n_ref:
        return None
    if not (isinstance(pairs, np.ndarray) and pairs.ndim == 2 and pairs.dtype.kind == "i") or not (
        n_cand and n_ref
    ):
        return np.zeros((0, 2), np.int64)
    return np.stack([pairs[:, 0] % n_cand, pairs[:, 1] % n_ref], axis=1)


@fuzz(500)
@given(
    cand=st.one_of(float_arrays(), float_arrays(), float_arrays(), ANY_MATRIX),
    ref_rows=st.one_of(float_arrays(), float_arrays(), float_arrays(), ANY_MATRIX),
    cand_offsets=SEGMENTS,
    ref_offsets=SEGMENTS,
    pairs=PAIRS,
    cand_weights=WEIGHTS,
    ref_weights=WEIGHTS,
    fit=st.integers(0, 3).map(bool),  # 3 times in 4: the drawn values brought into range
    seed=st.integers(0, 2**32 - 1),
)
def test_greedy_match(cand, ref_rows, cand_offsets, ref_offsets, pairs, cand_weights, ref_weights, fit, seed):
    rng = np.random.default_rng(seed)
    if fit:  # mostly valid arguments: the drawn values, brought into range
        dim = cand.shape[1] if is_float_matrix(cand) else int(rng.integers(1, 40))
        if not is_float_matrix(cand):
            cand = rng.standard_normal((int(rng.integers(0, 6)), dim)).astype(np.float32)
        if not is_float_matrix(ref_rows):
            ref_rows = rng.standard_normal((int(rng.integers(0, 6)), dim)).astype(np.float32)
        ref_rows = np.resize(ref_rows, (ref_rows.shape[0], dim)).astype(ref_rows.dtype)
        cand_offsets, ref_offsets = (
            fit_segments(cand_offsets, len(cand)),
            fit_segments(ref_offsets, len(ref_rows)),
        )
        # the drawn pairs and weights as they are in some cases: their errors, past valid matrices and offsets
        if seed % 4:
            pairs = fit_pairs(pairs, len(cand_offsets) - 1, len(ref_offsets) - 1)
        if seed % 3:
            cand_weights = "fit" if cand_weights is not None else None
            ref_weights = "fit" if ref_weights is not None and seed % 5 else ref_weights
    matrices = is_float_matrix(cand) and is_float_matrix(ref_rows)
    matrices = matrices and cand.shape[1] == ref_rows.shape[1]
    weights = {"cand_weights": cand_weights, "ref_weights": ref_weights}
    for name, rows in (("cand_weights", cand), ("ref_weights", ref_rows)):
        if isinstance(weights[name], str) and weights[name] == "fit":
            n = len(rows) if is_float_matrix(rows) else 3
            weights[name] = np.where(rng.random(n) < 0.3, 0.0, rng.uniform(0, 5, n)).astype(np.float32)

    def call():
        return kernels.greedy_match(cand, cand_offsets, ref_rows, ref_offsets, pairs, **weights)

    # the arguments at fault, in the order the kernel checks them (the first one raises)
    faults = []
    if not matrices:
        event("matrix fault")
        return expect_error(call, "cand", "ref")
    for name, offsets, rows in (("cand_offsets", cand_offsets, cand), ("ref_offsets", ref_offsets, ref_rows)):
        if not segments_valid(offsets, len(rows)):
            faults.append(name)
    if faults:
        event("offsets fault")
        return expect_error(call, *faults)
    n_cand, n_ref = len(cand_offsets) - 1, len(ref_offsets) - 1
    p = np.asarray(pairs) if pairs is not None and not isinstance(pairs, str) else None
    pairs_ok = (
        n_cand == n_ref
        if pairs is None
        else p is not None
        and p.dtype.kind in "iu"
        and p.ndim == 2
        and p.shape[1] == 2
        and bool(np.all((p[:, 0] >= 0) & (p[:, 0] < n_cand) & (p[:, 1] >= 0) & (p[:, 1] < n_ref)))
    )
    if not pairs_ok:
        event("pairs fault")
        return expect_error(call, "pairs")
    for name, rows in (("cand_weights", cand), ("ref_weights", ref_rows)):
        w = weights[name]
        if w is not None and not (
            isinstance(w, np.ndarray) and w.dtype.kind == "f" and w.shape == (len(rows),)
        ):
            faults.append(name)
    if faults:
        event("weights fault")
        return expect_error(call, *faults)
    event("computed")
    p_, r_, f_ = call()  # raw rows (any magnitude, NaN, inf): float32 results, F never NaN
    for out in (p_, r_, f_):
        assert out.dtype == np.float32 and out.shape == (len(p) if p is not None else n_cand,)
    assert not np.isnan(f_).any()
    # on L2-normalised rows (the contract), the float64 reference
    unit_cand, unit_ref = kernels.normalize(cand), kernels.normalize(ref_rows)
    got = kernels.greedy_match(unit_cand, cand_offsets, unit_ref, ref_offsets, pairs, **weights)
    expected = ref.greedy_match(
        unit_cand, np.asarray(cand_offsets), unit_ref, np.asarray(ref_offsets), p, **weights
    )
    ref.assert_greedy_close(got, expected, cand.shape[1])
