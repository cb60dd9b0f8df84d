"""simkernel's attention kernel (csrc/attention.h, ``simkernel._attention``) against float64 numpy, with both
sums of exp() it reproduces (where this CPU runs them), masks, and heads of 8 to 64 floats. Its bits against
onnxruntime's: tests/runtime/inference/test_attention_kernel.py. No model needed: ``make sanitize`` runs it
under AddressSanitizer with the rest of this folder.
"""

from __future__ import annotations

import numpy as np
import pytest

from simkernel import _attention
from simkernel.kernels import capabilities

CPU = capabilities()["cpu"]
needs_fma3 = pytest.mark.skipif(
    not (CPU["avx2"] and CPU["fma"]), reason="the attention kernel needs AVX2 and FMA (x86-64 since 2013)"
)


def reference(query, key, value, mask, rows, length, heads, alpha):
    """softmax(query . key^T * alpha + mask) . value per text and head, in float64."""
    width = query.shape[1] // heads

    def split(x):  # (rows * length, heads * width) -> (rows, heads, length, width)
        return x.astype(np.float64).reshape(rows, length, heads, width).transpose(0, 2, 1, 3)

    scores = split(query) @ split(key).transpose(0, 1, 3, 2) * alpha + mask.astype(np.float64)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ split(value)).transpose(0, 2, 1, 3).reshape(rows * length, heads * width)


def random_case(rng, rows, length, hidden, magnitude=4.0):
    query, key, value = (
        (rng.standard_normal((rows * length, hidden)) * magnitude).astype(np.float32) for _ in range(3)
    )
    return query, key, value, np.zeros((rows, 1, length, length), dtype=np.float32)


@needs_fma3
@pytest.mark.parametrize("sum_exp", ["fma3", "avx512f"])
@pytest.mark.parametrize(
    ("rows", "length", "heads", "hidden"),
    [(1, 2, 12, 384), (3, 5, 12, 384), (2, 17, 6, 384), (2, 50, 12, 768), (1, 130, 4, 32)],
)
def test_the_kernel_computes_attention(sum_exp, rows, length, heads, hidden):
    if not _attention.supported(sum_exp):
        pytest.skip(f"this CPU lacks {sum_exp}")
    rng = np.random.default_rng(length)
    query, key, value, mask = random_case(rng, rows, length, hidden)
    if length > 2:
        mask[-1, :, :, length // 2 :] = np.finfo(np.float32).min  # the last text's second half masked
    out = np.full_like(query, np.nan)
    _attention.attention(query, key, value, mask, rows, length, heads, 0.125, sum_exp, out)
    expected = reference(query, key, value, mask, rows, length, heads, 0.125)
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-5 * np.abs(value).max())
    if length > 2:  # a masked key weighs nothing: changing it changes nothing
        value[(rows - 1) * length + length - 1] += 100.0
        again = np.empty_like(out)
        _attention.attention(query, key, value, mask, rows, length, heads, 0.125, sum_exp, again)
        assert np.array_equal(again[(rows - 1) * length :], out[(rows - 1) * length :])


@needs_fma3
def test_wrong_arrays_are_refused_by_name():
    query, key, value, mask = random_case(np.random.default_rng(0), 1, 4, 64)
    out = np.empty_like(query)
    with pytest.raises(ValueError, match="query must be a C-contiguous float32 numpy array of 2 dimensions"):
        _attention.attention(query.astype(np.float64), key, value, mask, 1, 4, 2, 0.1, "fma3", out)
    with pytest.raises(ValueError, match=r"mask has shape \(1, 1, 1, 4\), not \(rows, 1, length, length\)"):
        _attention.attention(query, key, value, np.zeros((1, 1, 1, 4), np.float32), 1, 4, 2, 0.1, "fma3", out)
    with pytest.raises(ValueError, match="mask must be a C-contiguous float32 numpy array of 4 dimensions"):
        _attention.attention(query, key, value, mask[:, 0], 1, 4, 2, 0.1, "fma3", out)
    with pytest.raises(ValueError, match=r"key has shape \(3, 64\), query \(4, 64\)"):
        _attention.attention(query, key[:3].copy(), value, mask, 1, 4, 2, 0.1, "fma3", out)
    with pytest.raises(
        ValueError, match="the attention kernel takes heads of 8 to 64 floats in steps of 8, got 12"
    ):
        _attention.attention(
            query[:, :60].copy(),
            key[:, :60].copy(),
            value[:, :60].copy(),
            mask,
            1,
            4,
            5,
            0.1,
            "fma3",
            out[:, :60].copy(),
        )
    with pytest.raises(ValueError, match=r"sum_exp must be one of \['avx512f', 'fma3'\], got 'sse'"):
        _attention.attention(query, key, value, mask, 1, 4, 2, 0.1, "sse", out)
