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
