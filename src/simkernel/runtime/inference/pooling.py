"""Pooling of token embeddings into sentence embeddings, and L2 normalisation, in numpy.

Same formulas as sentence-transformers' ``Pooling`` and ``Normalize`` modules (padded path):

- ``mean``: sum of the unmasked token vectors / max(number of unmasked tokens, 1e-9).
- ``mean_sqrt_len_tokens``: the same sum / sqrt(max(count, 1e-9)).
- ``weightedmean``: token i (1-based, counted from the first unmasked position) weighted by i.
- ``cls``: the vector of the first unmasked token.
- ``max``: per-dimension maximum over unmasked tokens (masked positions set to -inf first).
- ``lasttoken``: the vector of the last unmasked token (works with left or right padding).
- :func:`l2_normalize`: ``x / max(||x||_2, 1e-12)`` per row (``torch.nn.functional.normalize``).

Inputs: ``token_embeddings`` float32 (batch, seq, hidden), ``attention_mask`` integer (batch, seq) of 0/1.
Outputs float32; sums run in float32 like sentence-transformers on float32 models (the mean uses a
batched matrix product, so the summation order differs from torch's: differences ~1e-7 relative).
Several modes (``"mean+max"``) are concatenated in the given order.
"""

from __future__ import annotations

import numpy as np

EPS_COUNT = 1e-9
EPS_NORM = 1e-12


def _mask(attention_mask: np.ndarray) -> np.ndarray:
    return attention_mask.astype(np.float32, copy=False)


def mean_pool(token_embeddings: np.ndarray, attention_mask: np.ndarray, sqrt_len: bool = False) -> np.ndarray:
    mask = _mask(attention_mask)
    summed = np.matmul(mask[:, None, :], token_embeddings)[:, 0, :]
    count = np.maximum(mask.sum(axis=1, keepdims=True), np.float32(EPS_COUNT))
    return summed / (np.sqrt(count) if sqrt_len else count)


def weighted_mean_pool(token_embeddings: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    mask = _mask(attention_mask)
    first = np.argmax(attention_mask, axis=1)  # number of left-padding positions
    positions = np.arange(1, mask.shape[1] + 1, dtype=np.float32)[None, :] - first[:, None]
    weights = mask * positions.astype(np.float32)
    summed = np.matmul(weights[:, None, :], token_embeddings)[:, 0, :]
    return summed / np.maximum(weights.sum(axis=1, keepdims=True), np.float32(EPS_COUNT))


def cls_pool(token_embeddings: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    first = np.argmax(attention_mask, axis=1)
    return token_embeddings[np.arange(token_embeddings.shape[0]), first]


def max_pool(token_embeddings: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    masked = np.where(attention_mask[:, :, None] != 0, token_embeddings, np.float32(-np.inf))
    return masked.max(axis=1)


def last_token_pool(token_embeddings: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    seq = attention_mask.shape[1]
    flipped = attention_mask[:, ::-1]
    last = seq - 1 - np.argmax(flipped, axis=1)
    last = np.where(flipped.max(axis=1) == 0, seq - 1, last)
    out = token_embeddings[np.arange(token_embeddings.shape[0]), last]
    return out * _mask(attention_mask)[np.arange(out.shape[0]), last][:, None]


_POOLERS = {
    "mean": mean_pool,
    "mean_sqrt_len_tokens": lambda e, m: mean_pool(e, m, sqrt_len=True),
    "weightedmean": weighted_mean_pool,
    "cls": cls_pool,
    "max": max_pool,
    "lasttoken": last_token_pool,
}


def pool(token_embeddings: np.ndarray, attention_mask: np.ndarray, mode: str = "mean") -> np.ndarray:
    """Pool (batch, seq, hidden) token embeddings to (batch, hidden x number of modes) float32."""
    embeddings = np.asarray(token_embeddings, dtype=np.float32)
    if embeddings.ndim != 3 or attention_mask.shape != embeddings.shape[:2]:
        raise ValueError(
            f"token embeddings must be (batch, seq, hidden) and the mask (batch, seq); got {embeddings.shape} and {attention_mask.shape}"
        )
    modes = mode.split("+")
    unknown = [m for m in modes if m not in _POOLERS]
    if unknown:
        raise ValueError(f"unknown pooling mode(s) {unknown}; known: {', '.join(_POOLERS)}")
    parts = [_POOLERS[m](embeddings, attention_mask) for m in modes]
    out = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    return np.ascontiguousarray(out, dtype=np.float32)


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows divided by max(L2 norm, 1e-12), float32 (a zero row stays zero)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float32))[:, None]
    return x / np.maximum(norms, np.float32(EPS_NORM))
