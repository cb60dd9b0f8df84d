"""greedy_match (BERTScore's greedy matching) against the float64 reference and bert_score itself, on every
backend: ragged texts, weights, pairs, threads, edge cases and every bad argument."""

from __future__ import annotations

import re

import kernel_reference as ref
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_reference import assert_greedy_close, unit_rows

from simkernel import kernels

SMALL_DIMS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 97, 129]


def offsets_of(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def texts(rng, lengths, dim, kind="normal"):
    """Unit token rows of texts of the given lengths, concatenated, and their offsets."""
    offsets = offsets_of(lengths)
    return unit_rows(rng, int(offsets[-1]), dim, kind), offsets


def idf_weights(rng, offsets, zeros=True) -> np.ndarray:
    """Random positive weights; with zeros, 0 for the first and last token of each text ([CLS], [SEP])."""
    weights = rng.uniform(0.1, 5.0, size=int(offsets[-1])).astype(np.float32)
    if zeros:
        for begin, end in zip(offsets[:-1], offsets[1:], strict=True):
            if end > begin:
                weights[[begin, end - 1]] = 0.0
    return weights


def random_pairs(rng, n_cand, n_ref, n_pairs) -> np.ndarray:
    """Pairs in random order, with repeats (several references per candidate, the same pair twice)."""
    pairs = np.stack([rng.integers(0, n_cand, n_pairs), rng.integers(0, n_ref, n_pairs)], axis=1)
    pairs[-1] = pairs[0]
    return pairs.astype(np.int64)


def check(dim, cand, co, rf, ro, pairs=None, cw=None, rw=None):
    got = kernels.greedy_match(cand, co, rf, ro, pairs, cand_weights=cw, ref_weights=rw)
    assert isinstance(got, tuple) and len(got) == 3
    assert_greedy_close(got, ref.greedy_match(cand, co, rf, ro, pairs, cw, rw), dim)
    return got


# ---- against the float64 reference ----


@pytest.mark.parametrize("dim", SMALL_DIMS)
@pytest.mark.parametrize("kind", ["normal", "positive"])
def test_small_dims_and_odd_lengths(backend, rng, dim, kind):
    """Every SIMD tail of the dot products (dims) and of the 4-row candidate blocks (lengths 1..13)."""
    cand, co = texts(rng, [1, 2, 3, 4, 5, 6, 7, 8, 9, 13], dim, kind)
    rf, ro = texts(rng, [13, 9, 1, 4, 5, 2, 3, 8, 7, 6], dim, kind)
    check(dim, cand, co, rf, ro)
    check(dim, cand, co, rf, ro, random_pairs(rng, 10, 10, 25), idf_weights(rng, co), idf_weights(rng, ro))


@pytest.mark.parametrize("dim", [384, 768])
def test_long_ragged_texts(backend, rng, dim):
    """1 to 512 tokens a side (the BERT limit), idf weights with zeros, pairs permuted and repeated."""
    cand, co = texts(rng, [512, 1, 37, 255, 130, 3], dim, "positive")
    rf, ro = texts(rng, [1, 512, 64, 97, 2], dim, "positive")
    pairs = np.array(
        [[0, 1], [1, 0], [0, 0], [1, 1], [5, 3], [2, 4], [3, 2], [4, 3], [0, 1], [5, 0]], np.int64
    )
    check(dim, cand, co, rf, ro, pairs, idf_weights(rng, co), idf_weights(rng, ro))
    check(dim, cand, co, rf, ro, pairs[:3])  # no weights: plain means


@pytest.mark.parametrize("dim", [17, 384])
def test_random_shapes(backend, dim):
    rng = np.random.default_rng(dim)
    for _ in range(4):
        cand, co = texts(rng, rng.integers(1, 60, size=rng.integers(1, 8)), dim)
        rf, ro = texts(rng, rng.integers(1, 60, size=rng.integers(1, 8)), dim)
        pairs = random_pairs(rng, len(co) - 1, len(ro) - 1, int(rng.integers(1, 12)))
        check(dim, cand, co, rf, ro, pairs, idf_weights(rng, co, zeros=False), None)
        check(dim, cand, co, rf, ro, pairs, None, idf_weights(rng, ro))


# ---- bert_score's own implementation ----


@pytest.mark.parametrize("dim", [384, 768])
def test_matches_bert_score_greedy_cos_idf(backend, dim):
    """bert_score 0.3.13's torch greedy_cos_idf on a padded batch whose cosines are all positive (so the 0 of
    its masked padding never wins a maximum) agrees within 1e-6."""
    torch = pytest.importorskip("torch")
    bert_utils = pytest.importorskip("bert_score.utils")
    rng = np.random.default_rng(dim)
    cand_lengths, ref_lengths = [5, 40, 3, 17, 64], [9, 3, 33, 64, 12]
    width = max(cand_lengths + ref_lengths)

    def batch(lengths):
        # |normal| rows: every cosine between them is positive; padding rows are real vectors too
        # (bert_score normalises every row, and a zero padding row would become NaN)
        rows = np.abs(rng.standard_normal((len(lengths), width, dim)))
        rows /= np.linalg.norm(rows, axis=-1, keepdims=True)
        rows = rows.astype(np.float32)
        masks = (np.arange(width)[None, :] < np.array(lengths)[:, None]).astype(np.int64)
        idf = rng.uniform(0.5, 3.0, size=(len(lengths), width)).astype(np.float32)
        idf[:, 0] = 0.0  # [CLS]
        idf[np.arange(len(lengths)), np.array(lengths) - 1] = 0.0  # [SEP]
        idf *= masks
        return rows, masks, idf

    hyp, hyp_masks, hyp_idf = batch(cand_lengths)
    refs, ref_masks, ref_idf = batch(ref_lengths)
    expected = bert_utils.greedy_cos_idf(
        torch.from_numpy(refs.copy()),
        torch.from_numpy(ref_masks),
        torch.from_numpy(ref_idf.copy()),
        torch.from_numpy(hyp.copy()),
        torch.from_numpy(hyp_masks),
        torch.from_numpy(hyp_idf.copy()),
    )
    cand = np.concatenate([hyp[i, :n] for i, n in enumerate(cand_lengths)])
    rf = np.concatenate([refs[i, :n] for i, n in enumerate(ref_lengths)])
    cw = np.concatenate([hyp_idf[i, :n] for i, n in enumerate(cand_lengths)])
    rw = np.concatenate([ref_idf[i, :n] for i, n in enumerate(ref_lengths)])
    got = kernels.greedy_match(
        cand, offsets_of(cand_lengths), rf, offsets_of(ref_lengths), cand_weights=cw, ref_weights=rw
    )
    for ours, theirs in zip(got, expected, strict=True):
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=0, atol=1e-6)


# ---- pairs, batches and threads ----


def test_each_pair_is_independent_of_its_batch(backend, rng):
    """A pair's result is bit-identical alone, in a batch, permuted, repeated (no padding, no batch state)."""
    dim = 65
    cand, co = texts(rng, [3, 0, 11, 1, 30], dim)
    rf, ro = texts(rng, [7, 4, 0, 29], dim)
    cw, rw = idf_weights(rng, co), idf_weights(rng, ro)
    pairs = random_pairs(rng, 5, 4, 30)
    p, r, f = kernels.greedy_match(cand, co, rf, ro, pairs, cw, rw)
    for k, pair in enumerate(pairs):
        alone = kernels.greedy_match(cand, co, rf, ro, pair[None, :], cw, rw)
        np.testing.assert_array_equal(np.concatenate(alone), [p[k], r[k], f[k]])
    # the texts alone: only this candidate's and this reference's rows exist
    c, q = pairs[3]
    only = kernels.greedy_match(
        cand[co[c] : co[c + 1]],
        [0, co[c + 1] - co[c]],
        rf[ro[q] : ro[q + 1]],
        [0, ro[q + 1] - ro[q]],
        None,
        cw[co[c] : co[c + 1]],
        rw[ro[q] : ro[q + 1]],
    )
    np.testing.assert_array_equal(np.concatenate(only), [p[3], r[3], f[3]])
    order = rng.permutation(len(pairs))
    shuffled = kernels.greedy_match(cand, co, rf, ro, pairs[order], cw, rw)
    for got, whole in zip(shuffled, (p, r, f), strict=True):
        np.testing.assert_array_equal(got, whole[order])


def test_threads_give_identical_results(backend, rng):
    """Large enough to be split over threads (parts of >= 2**21 multiply-adds), skewed so that balancing by
    work, not by count, matters; 1, 2, 3 and 8 threads give the same bits."""
    dim = 384
    cand, co = texts(rng, [300, 5, 2, 200] + [20] * 30, dim)
    rf, ro = texts(rng, [250, 3, 90] + [25] * 20, dim)
    pairs = random_pairs(rng, len(co) - 1, len(ro) - 1, 120)
    pairs[:4] = [[0, 0], [3, 0], [0, 2], [1, 1]]
    cw, rw = idf_weights(rng, co), idf_weights(rng, ro)
    previous = kernels.get_num_threads()
    results = {}
    try:
        for threads in (1, 2, 3, 8):
            kernels.set_num_threads(threads)
            results[threads] = kernels.greedy_match(cand, co, rf, ro, pairs, cw, rw)
    finally:
        kernels.set_num_threads(previous)
    for threads, got in results.items():
        for a, b in zip(got, results[1], strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"{threads} threads")
    assert_greedy_close(results[1], ref.greedy_match(cand, co, rf, ro, pairs, cw, rw), dim)


def test_backends_agree_closely(rng):
    dim = 385
    cand, co = texts(rng, [9, 1, 22], dim)
    rf, ro = texts(rng, [5, 17, 4], dim)
    results = {}
    for name in kernels.available_backends():
        with kernels.use_backend(name):
            results[name] = np.stack(kernels.greedy_match(cand, co, rf, ro))
    for name, got in results.items():
        np.testing.assert_allclose(got, results["serial"], atol=4 * ref.tolerance(dim), err_msg=name)


# ---- edge cases ----


@pytest.mark.parametrize("dim", [1, 8, 17, 384])
def test_empty_texts_score_zero(backend, rng, dim):
    cand, co = texts(rng, [0, 3, 0, 5], dim)
    rf, ro = texts(rng, [4, 0, 0, 6], dim)
    p, r, f = check(dim, cand, co, rf, ro, None, idf_weights(rng, co), idf_weights(rng, ro))
    for k in (0, 1, 2):  # an empty text on either side
        assert p[k] == r[k] == f[k] == 0.0
    assert f[3] != 0.0


def test_no_pairs_and_no_texts(backend):
    empty = np.zeros((0, 8), np.float32)
    for out in kernels.greedy_match(empty, [0], empty, [0]):
        assert out.shape == (0,) and out.dtype == np.float32
    rows = np.ones((3, 8), np.float32) / np.sqrt(8)
    for out in kernels.greedy_match(rows, [0, 3], rows, [0, 3], np.zeros((0, 2), np.int64)):
        assert out.shape == (0,)


def test_zero_dimension_rows(backend):
    rows = np.zeros((3, 0), np.float32)
    p, r, f = kernels.greedy_match(rows, [0, 1, 3], rows, [0, 2, 3])
    np.testing.assert_array_equal(np.stack([p, r, f]), 0.0)


@pytest.mark.parametrize("dim", [3, 16, 384])
def test_zero_weights(backend, rng, dim):
    """A side whose weights sum to 0 scores 0 (F then 0); zero-weight tokens still take part in the maxima."""
    cand, co = texts(rng, [5, 6, 2], dim)
    rf, ro = texts(rng, [4, 7, 3], dim)
    cw, rw = idf_weights(rng, co), idf_weights(rng, ro)
    cw[co[0] : co[1]] = 0.0
    rw[ro[1] : ro[2]] = 0.0
    cw[co[2] : co[3]] = 0.0  # text 2 has 2 tokens, both [CLS]/[SEP]-like: all weights 0
    p, r, f = check(dim, cand, co, rf, ro, None, cw, rw)
    assert p[0] == 0.0 and f[0] == 0.0 and r[0] != 0.0
    assert r[1] == 0.0 and f[1] == 0.0 and p[1] != 0.0
    assert p[2] == 0.0


def test_zero_weight_tokens_take_part_in_the_maxima(backend):
    """The reference token of weight 0 (say [SEP]) is the candidate's best match: P counts it, R does not."""
    cand = np.array([[1.0, 0.0]], np.float32)
    rf = np.array([[0.6, 0.8], [1.0, 0.0]], np.float32)
    p, r, f = kernels.greedy_match(cand, [0, 1], rf, [0, 2], ref_weights=np.array([1.0, 0.0], np.float32))
    assert p[0] == np.float32(1.0)  # max over both reference tokens, the weight-0 one included
    assert r[0] == np.float32(0.6)  # the weighted mean of the column maxima: only the first counts
    recall = float(np.float32(0.6))
    assert f[0] == np.float32(2 * 1.0 * recall / (1.0 + recall))  # from the float32 P and R, in float64


def test_opposite_p_and_r_give_infinite_f(backend):
    """P + R = 0 with P != 0: F = 2PR / 0 is infinite (as in bert_score), not NaN, so it stays."""
    cand = np.array([[1.0, 0.0]], np.float32)
    rf = np.array([[0.25, np.sqrt(1 - 0.25**2)], [-0.75, np.sqrt(1 - 0.75**2)]], np.float32)
    p, r, f = kernels.greedy_match(cand, [0, 1], rf, [0, 2])
    assert (p[0], r[0]) == (np.float32(0.25), np.float32(-0.25))
    assert f[0] == -np.inf


@pytest.mark.parametrize("dim", [1, 4, 5, 16, 17, 384])
def test_nan_rows_propagate_and_f_becomes_zero(backend, rng, dim):
    bad = np.nan
    cand, co = texts(rng, [5, 5, 5, 5], dim)
    rf, ro = texts(rng, [3, 3, 3, 3], dim)
    cand[co[1] + 4, dim // 2] = bad  # in candidate text 1's scalar tail (rows 4.. of 5)
    cand[co[2] + 1, 0] = bad  # in a 4-row block of candidate text 2
    rf[ro[3] + 2, dim - 1] = bad  # the last token of reference text 3
    cw = idf_weights(rng, co)  # the weight of a bad row is 0 in text 1's last token: still NaN
    pairs = np.array([[0, 0], [1, 0], [2, 1], [0, 3], [1, 3]], np.int64)
    p, r, f = check(dim, cand, co, rf, ro, pairs, cw, None)
    assert not np.isnan([p[0], r[0]]).any() and f[0] != 0.0
    for k in (1, 2, 3, 4):  # a NaN token meets every token of the other side: both P and R are NaN
        assert np.isnan(p[k]) and np.isnan(r[k]) and f[k] == 0.0, k


def test_nan_weight_makes_its_side_nan(backend, rng):
    cand, co = texts(rng, [4, 4], 8)
    rf, ro = texts(rng, [3, 3], 8)
    cw = np.ones(8, np.float32)
    cw[5] = np.nan
    p, r, f = check(8, cand, co, rf, ro, None, cw, None)
    assert np.isnan(p[1]) and not np.isnan(r[1]) and f[1] == 0.0
    assert not np.isnan(p[0])


# ---- input forms ----


def test_accepts_lists_float64_strided_and_readonly(backend, rng):
    cand, co = texts(rng, [3, 5], 12)
    rf, ro = texts(rng, [4, 2], 12)
    expected = kernels.greedy_match(cand, co, rf, ro, [[0, 1], [1, 0]], np.ones(8), np.ones(6))
    wide = np.zeros((12, 24), np.float32)
    wide[::, ::2] = np.concatenate([rf, rf])
    frozen = cand.copy()
    frozen.setflags(write=False)
    forms = [
        (cand.tolist(), co.tolist(), rf.astype(np.float64), ro.astype(np.int32)),
        (np.asfortranarray(cand), co.astype(np.uint64), wide[:6, ::2], ro[::-1].copy()[::-1]),
        (frozen, co, rf.astype(">f4"), ro.astype(">i8")),
    ]
    for c, c_off, r, r_off in forms:
        got = kernels.greedy_match(c, c_off, r, r_off, np.array([[0, 1], [1, 0]], np.int32), [1.0] * 8, None)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)


# ---- bad arguments: each names the argument and the fix, before any native code runs ----

GOOD = np.eye(4, dtype=np.float32)
OFFSETS = np.array([0, 1, 4], np.int64)


def call(**changes):
    args = dict(cand=GOOD, cand_offsets=OFFSETS, ref=GOOD, ref_offsets=OFFSETS)
    args.update(changes)
    return kernels.greedy_match(**args)


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"cand": GOOD.astype(np.int64)}, TypeError, r"cand has dtype int64; expected float32"),
        ({"ref": GOOD.astype(np.float16)}, TypeError, r"ref has dtype float16; expected float32"),
        ({"cand": None}, TypeError, r"cand must be a 2-D float32 array"),
        ({"ref": GOOD[0]}, ValueError, r"ref must be 2-D \(rows, dim\); got 1-D shape \(4,\)"),
        ({"ref": np.ones((4, 5), np.float32)}, ValueError, r"got cand \(4, 4\) and ref \(4, 5\)"),
        ({"cand_offsets": None}, TypeError, r"cand_offsets must be a 1-D int64 array .*got None"),
        ({"cand_offsets": [0.0, 1.0, 4.0]}, TypeError, r"cand_offsets has dtype float64; expected int64"),
        ({"ref_offsets": [[0, 1, 4]]}, ValueError, r"ref_offsets must be 1-D .*got shape \(1, 3\)"),
        (
            {"ref_offsets": np.array([], np.int64)},
            ValueError,
            r"ref_offsets must be 1-D .*at least \[0\].*got shape \(0,\)",
        ),
        (
            {"cand_offsets": [1, 2, 4]},
            ValueError,
            r"invalid cand_offsets: cand_offsets\[0\] is 1; expected 0",
        ),
        (
            {"ref_offsets": [0, 3, 2, 4]},
            ValueError,
            r"ref_offsets\[2\] is 2, less than ref_offsets\[1\] = 3 \(must not decrease\)",
        ),
        (
            {"cand_offsets": [0, 1, 3]},
            ValueError,
            r"cand_offsets\[2\] \(the last\) is 3; expected len\(cand\) = 4",
        ),
        ({"ref_offsets": [0, 5, 4]}, ValueError, r"ref_offsets\[1\] is 5, beyond len\(ref\) = 4"),
        (
            {"ref_offsets": np.array([0, 1, 2**63 + 4], np.uint64)},
            ValueError,
            r"ref_offsets value 9223372036854775812 does not fit in int64",
        ),
        (
            {"ref_offsets": [0, 1, 2, 4]},
            ValueError,
            r"pairs=None scores candidate text i against reference text i.*got 2 candidate and 3 reference texts",
        ),
        ({"pairs": [[0, 1, 1]]}, ValueError, r"pairs must have shape \(n_pairs, 2\).*got shape \(1, 3\)"),
        ({"pairs": [0, 1]}, ValueError, r"pairs must have shape \(n_pairs, 2\).*got shape \(2,\)"),
        ({"pairs": [[0.0, 1.0]]}, TypeError, r"pairs has dtype float64; expected int64"),
        (
            {"pairs": [[0, 1], [2, 0]]},
            ValueError,
            r"pairs\[1, 0\] is 2, not a candidate text index: cand_offsets defines 2 candidate texts, so it must be in 0..1",
        ),
        (
            {"pairs": [[0, -1]]},
            ValueError,
            r"pairs\[0, 1\] is -1, not a reference text index.*negative indices are not accepted",
        ),
        (
            {"pairs": np.array([[0, 7]], np.int64)},
            ValueError,
            r"pairs\[0, 1\] is 7, not a reference text index",
        ),
        (
            {"cand_weights": np.ones(3, np.float32)},
            ValueError,
            r"cand_weights must be 1-D with one weight per row of cand, length len\(cand\) = 4; got shape \(3,\)",
        ),
        (
            {"ref_weights": np.ones((4, 1), np.float32)},
            ValueError,
            r"ref_weights must be 1-D .*got shape \(4, 1\)",
        ),
        ({"ref_weights": np.ones(4, np.int64)}, TypeError, r"ref_weights has dtype int64; expected float32"),
        ({"cand_weights": "idf"}, TypeError, r"cand_weights has dtype <U3; expected float32"),
    ],
)
def test_bad_arguments(changes, error, message):
    with pytest.raises(error, match=message):
        call(**changes)


def test_bad_arguments_never_reach_native_code():
    """A wrong offset deep in a long call is refused before anything is computed (and nothing is read out of
    bounds: scripts/sanitize.sh runs this module under AddressSanitizer)."""
    rows = np.ones((1000, 8), np.float32)
    offsets = np.arange(1001, dtype=np.int64)
    offsets[500] = 10**12
    with pytest.raises(
        ValueError, match=re.escape("cand_offsets[500] is 1000000000000, beyond len(cand) = 1000")
    ):
        kernels.greedy_match(rows, offsets, rows, np.arange(1001, dtype=np.int64))
    pairs = np.zeros((1000, 2), np.int64)
    pairs[999, 1] = 1000
    with pytest.raises(ValueError, match=re.escape("pairs[999, 1] is 1000, not a reference text index")):
        kernels.greedy_match(rows, np.arange(1001), rows, np.arange(1001), pairs)


# ---- properties (hypothesis) ----


@st.composite
def greedy_inputs(draw):
    dim = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    cand_lengths = draw(st.lists(st.integers(0, 9), min_size=0, max_size=5))
    ref_lengths = draw(st.lists(st.integers(0, 9), min_size=0, max_size=5))
    n_pairs = draw(st.integers(0, 8)) if cand_lengths and ref_lengths else 0
    rng = np.random.default_rng(seed)
    cand, co = texts(rng, cand_lengths, dim)
    rf, ro = texts(rng, ref_lengths, dim)
    pairs = np.zeros((0, 2), np.int64)
    if n_pairs:
        pairs = random_pairs(rng, len(cand_lengths), len(ref_lengths), n_pairs)
    weights = draw(st.sampled_from(["none", "idf", "zeros"]))
    cw = rw = None
    if weights != "none":
        cw, rw = idf_weights(rng, co), idf_weights(rng, ro)
        if weights == "zeros":
            cw[rng.random(len(cw)) < 0.5] = 0.0
    return dim, cand, co, rf, ro, pairs, cw, rw


@pytest.mark.parametrize("backend_name", kernels.available_backends())
@settings(max_examples=80, deadline=None)
@given(data=greedy_inputs())
def test_property_matches_reference(backend_name, data):
    dim, cand, co, rf, ro, pairs, cw, rw = data
    with kernels.use_backend(backend_name):
        got = kernels.greedy_match(cand, co, rf, ro, pairs, cw, rw)
        swapped = kernels.greedy_match(rf, ro, cand, co, pairs[:, ::-1].copy(), rw, cw)
    assert_greedy_close(got, ref.greedy_match(cand, co, rf, ro, pairs, cw, rw), dim)
    # swapping the sides swaps P and R (the same similarities, transposed; the same F)
    np.testing.assert_allclose(swapped[0], got[1], atol=2 * ref.tolerance(dim))
    np.testing.assert_allclose(swapped[1], got[0], atol=2 * ref.tolerance(dim))
