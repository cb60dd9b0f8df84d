"""Pooling modes and normalisation vs float64 numpy loops written from sentence-transformers' definitions."""

from __future__ import annotations

import numpy as np
import pytest

from simkernel.runtime.inference.pooling import l2_normalize, pool


def _reference(emb: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    out = []
    for e, m in zip(emb.astype(np.float64), mask, strict=True):
        idx = np.flatnonzero(m)
        if mode == "mean":
            out.append(e[idx].sum(0) / max(len(idx), 1e-9))
        elif mode == "mean_sqrt_len_tokens":
            out.append(e[idx].sum(0) / np.sqrt(max(len(idx), 1e-9)))
        elif mode == "cls":
            out.append(e[idx[0]])
        elif mode == "max":
            out.append(e[idx].max(0))
        elif mode == "lasttoken":
            out.append(e[idx[-1]])
        elif mode == "weightedmean":
            w = np.arange(1, len(idx) + 1, dtype=np.float64)  # 1-based from the first real token
            out.append((e[idx] * w[:, None]).sum(0) / w.sum())
    return np.array(out)


def _batch(rng, padding_side):
    emb = rng.standard_normal((5, 9, 16)).astype(np.float32)
    lengths = [9, 1, 4, 7, 2]
    mask = np.zeros((5, 9), dtype=np.int64)
    for row, n in enumerate(lengths):
        if padding_side == "right":
            mask[row, :n] = 1
        else:
            mask[row, 9 - n :] = 1
    emb[mask == 0] = 1e6  # padded positions must never leak into the result
    return emb, mask


@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("mode", ["mean", "mean_sqrt_len_tokens", "cls", "max", "lasttoken", "weightedmean"])
def test_modes_match_reference(mode, padding_side):
    emb, mask = _batch(np.random.default_rng(0), padding_side)
    got = pool(emb, mask, mode)
    assert got.dtype == np.float32 and got.shape == (5, 16)
    np.testing.assert_allclose(got, _reference(emb, mask, mode), rtol=1e-5, atol=1e-5)


def test_concatenated_modes():
    emb, mask = _batch(np.random.default_rng(1), "right")
    got = pool(emb, mask, "cls+mean")
    expected = np.concatenate([_reference(emb, mask, "cls"), _reference(emb, mask, "mean")], axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_bad_mode_and_shapes():
    emb, mask = _batch(np.random.default_rng(2), "right")
    with pytest.raises(ValueError, match="unknown pooling"):
        pool(emb, mask, "median")
    with pytest.raises(ValueError, match="batch, seq, hidden"):
        pool(emb[0], mask, "mean")


def test_l2_normalize():
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1e-30, 0.0]], dtype=np.float64)
    got = l2_normalize(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got[0], [0.6, 0.8], rtol=1e-7)
    np.testing.assert_array_equal(got[1], [0.0, 0.0])  # zero row stays zero (no NaN)
    assert np.isfinite(got).all()
    rng = np.random.default_rng(3)
    y = rng.standard_normal((50, 33)).astype(np.float32)
    ref = y.astype(np.float64) / np.linalg.norm(y.astype(np.float64), axis=1, keepdims=True)
    np.testing.assert_allclose(l2_normalize(y), ref, rtol=1e-6, atol=1e-7)
