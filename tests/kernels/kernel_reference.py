"""Independent float64 references for the kernel tests, in plain numpy, plus the stated tolerance."""

from __future__ import annotations

import numpy as np

DIMS = [1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 97, 384, 768, 1024]


def tolerance(dim: int) -> float:
    """Absolute error allowed for a float32 cosine against the float64 reference (see simkernel.kernels)."""
    return 2e-6 + 3e-7 * np.sqrt(dim)


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a[i], b[j]) in float64: 0 for a zero row (unless the dot is NaN), NaN where a row has NaN/inf."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        dots = a64 @ b64.T
        na = np.sqrt(np.sum(a64 * a64, axis=1))
        nb = np.sqrt(np.sum(b64 * b64, axis=1))
        denom = np.outer(na, nb)
        bad = ~np.isfinite(na)[:, None] | ~np.isfinite(nb)[None, :]
        sims = np.where(denom > 0, dots / np.where(denom > 0, denom, 1.0), dots * 0.0)
        return np.where(bad, np.nan, sims)


def paired_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array(
        [cosine_matrix(a[i : i + 1], b[i : i + 1])[0, 0] for i in range(len(a))], dtype=np.float64
    )


def normalize(x: np.ndarray) -> np.ndarray:
    x64 = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        norms = np.sqrt(np.sum(x64 * x64, axis=1, keepdims=True))
        out = np.where(norms > 0, x64 / np.where(norms > 0, norms, 1.0), 0.0 * x64)
        return np.where(np.isfinite(norms), out, np.nan)


def reduce_groups(
    sims_per_group: list[np.ndarray], how: str, clamp: tuple[float, float] | None
) -> np.ndarray:
    """max/mean of each group's similarities after clamping each one; 0.0 for an empty group."""
    out = []
    for sims in sims_per_group:
        s = np.asarray(sims, np.float64)
        if clamp is not None:
            s = np.clip(s, clamp[0], clamp[1])
        if s.size == 0:
            out.append(0.0)
        elif np.isnan(s).any():
            out.append(np.nan)
        else:
            out.append(s.max() if how == "max" else s.mean())
    return np.array(out, dtype=np.float64)


def ragged(queries: np.ndarray, refs: np.ndarray, offsets: np.ndarray, how: str, clamp=None) -> np.ndarray:
    groups = [
        cosine_matrix(queries[i : i + 1], refs[offsets[i] : offsets[i + 1]])[0] for i in range(len(queries))
    ]
    return reduce_groups(groups, how, clamp)


def dense(queries: np.ndarray, refs: np.ndarray, how: str, clamp=None) -> np.ndarray:
    return reduce_groups(list(cosine_matrix(queries, refs)), how, clamp)


def assert_close(actual: np.ndarray, expected: np.ndarray, dim: int) -> None:
    """float32 output, same shape, NaN exactly where expected, values within tolerance(dim)."""
    actual = np.asarray(actual)
    assert actual.dtype == np.float32, actual.dtype
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg="NaN pattern differs")
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tolerance(dim), equal_nan=True)


def random_rows(rng: np.random.Generator, n: int, dim: int, kind: str = "normal") -> np.ndarray:
    """float32 rows: 'normal', 'positive' (embedding-like, cosines near 1) or 'scaled' (wide magnitudes)."""
    if kind == "normal":
        x = rng.standard_normal((n, dim))
    elif kind == "positive":
        x = 1.0 + 0.05 * rng.standard_normal((n, dim))
    elif kind == "scaled":
        x = rng.standard_normal((n, dim)) * 10.0 ** rng.uniform(-6, 6, size=(n, 1))
    else:
        raise ValueError(kind)
    return x.astype(np.float32)


def unit_rows(rng: np.random.Generator, n: int, dim: int, kind: str = "normal") -> np.ndarray:
    """float32 rows of unit L2 norm (normalised in float64): token vectors as BERTScore compares them."""
    x = random_rows(rng, n, dim, kind).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def greedy_match(
    cand: np.ndarray,
    cand_offsets: np.ndarray,
    ref: np.ndarray,
    ref_offsets: np.ndarray,
    pairs: np.ndarray | None = None,
    cand_weights: np.ndarray | None = None,
    ref_weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BERTScore's greedy matching in float64, one pair at a time: (P, R, F) as float64 arrays.

    Similarities are the plain dot products of the float32 rows (computed in float64). Every token takes
    part in the maxima; weights (1 when None) weight the means; an empty text on either side gives 0 for
    all three, a weight sum of 0 gives 0 for that side, NaN stays NaN through the maxima and the means,
    and a NaN F becomes 0.
    """
    if pairs is None:
        pairs = np.stack([np.arange(len(cand_offsets) - 1)] * 2, axis=1)
    c64, r64 = np.asarray(cand, np.float64), np.asarray(ref, np.float64)
    wc = np.ones(len(cand)) if cand_weights is None else np.asarray(cand_weights, np.float64)
    wr = np.ones(len(ref)) if ref_weights is None else np.asarray(ref_weights, np.float64)
    scores = np.zeros((len(pairs), 3))
    for k, (c, r) in enumerate(np.asarray(pairs)):
        cs, rs = slice(cand_offsets[c], cand_offsets[c + 1]), slice(ref_offsets[r], ref_offsets[r + 1])
        if cs.stop == cs.start or rs.stop == rs.start:
            continue
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            sims = c64[cs] @ r64[rs].T
            best_of_cand, best_of_ref = sims.max(axis=1), sims.max(axis=0)
            p = 0.0 if wc[cs].sum() == 0 else float((wc[cs] * best_of_cand).sum() / wc[cs].sum())
            r_ = 0.0 if wr[rs].sum() == 0 else float((wr[rs] * best_of_ref).sum() / wr[rs].sum())
            f = (
                2 * p * r_ / (p + r_)
                if p + r_ != 0
                else (np.nan if p * r_ == 0 else np.copysign(np.inf, p * r_))
            )
        scores[k] = p, r_, 0.0 if np.isnan(f) else f
    return scores[:, 0], scores[:, 1], scores[:, 2]


def assert_greedy_close(actual: tuple, expected: tuple, dim: int) -> None:
    """P and R within tolerance(dim) of the float64 reference (NaN exactly where expected); F never NaN,
    exactly 0 where P or R is NaN, exactly the reference where that is infinite, otherwise within the
    tolerance carried through F = 2PR / (P + R): |dF| <= 2 (P^2 + R^2) / (P + R)^2 * tolerance(dim)."""
    p, r, f = actual
    ep, er, ef = expected
    assert_close(p, ep, dim)
    assert_close(r, er, dim)
    f = np.asarray(f)
    assert f.dtype == np.float32 and f.shape == ef.shape, (f.dtype, f.shape, ef.shape)
    assert not np.isnan(f).any(), f"F is never NaN: {f}"
    nan_side = np.isnan(ep) | np.isnan(er)
    np.testing.assert_array_equal(f[nan_side], 0.0)
    infinite = ~nan_side & np.isinf(ef)
    np.testing.assert_array_equal(f[infinite], ef[infinite])
    rest = ~nan_side & ~infinite
    p64, r64 = ep[rest], er[rest]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        gain = 2 * (p64**2 + r64**2) / (p64 + r64) ** 2
    gain = np.where(np.isfinite(gain), np.maximum(gain, 1.0), np.inf)
    error = np.abs(f[rest].astype(np.float64) - ef[rest])
    bad = ~(error <= 2 * tolerance(dim) * gain)
    assert not bad.any(), (
        f"F off the reference: got {f[rest][bad]}, expected {ef[rest][bad]} (P {p64[bad]}, R {r64[bad]})"
    )
