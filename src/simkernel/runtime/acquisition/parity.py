"""Parity figures of a bundle's graph against expected outputs on the probe set, loaded as users load it.

The exporter compares each graph it writes with sentence-transformers (:mod:`.export`); ``simkernel models
info`` compares ``precision="bf16"`` with the bundle's own fp32 on this machine (:func:`bf16_parity`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simkernel.runtime.acquisition.export_probes import PROBE_PAIRS, PROBE_TEXTS
from simkernel.runtime.inference.cross_encoder import BundleCrossEncoder
from simkernel.runtime.inference.text_encoder import BundleTextEncoder


def probe_outputs(bundle: Path, precision: str, kind: str, threads: int = 1) -> np.ndarray:
    """float64 outputs of ``bundle``'s ``precision`` graph on the probe set: unit embeddings of
    :data:`PROBE_TEXTS` (bi-encoder) or the scores of :data:`PROBE_PAIRS` (cross-encoder)."""
    if kind == "bi-encoder":
        encoder = BundleTextEncoder(bundle, precision=precision, threads=threads, cache_size=0)
        return encoder.encode(list(PROBE_TEXTS), batch_size=8, normalize=True).astype(np.float64)
    scorer = BundleCrossEncoder(bundle, precision=precision, threads=threads)
    return np.asarray(scorer.predict(list(PROBE_PAIRS), batch_size=8), dtype=np.float64)


def compare(bundle: Path, precision: str, kind: str, expected: np.ndarray, threads: int = 1) -> dict:
    """Parity figures of the bundle's ``precision`` graph against ``expected`` (as :func:`probe_outputs`
    gives them): bi-encoder min / mean cosine and max abs difference; cross-encoder max / mean abs score
    difference; both with the max abs difference of each probe run alone vs in the batch."""
    if kind == "bi-encoder":
        encoder = BundleTextEncoder(bundle, precision=precision, threads=threads, cache_size=0)
        got = encoder.encode(list(PROBE_TEXTS), batch_size=8, normalize=True).astype(np.float64)
        norms = np.linalg.norm(got, axis=1) * np.linalg.norm(expected, axis=1)
        cosine = (got * expected).sum(axis=1) / np.maximum(norms, 1e-30)
        alone = np.stack([encoder.encode([t], normalize=True)[0] for t in PROBE_TEXTS]).astype(np.float64)
        return {
            "probe_texts": len(PROBE_TEXTS),
            "min_cosine": float(cosine.min()),
            "mean_cosine": float(cosine.mean()),
            "max_abs_diff": float(np.abs(got - expected).max()),
            "max_abs_diff_alone_vs_batch": float(np.abs(alone - got).max()),
        }
    scorer = BundleCrossEncoder(bundle, precision=precision, threads=threads)
    got = np.asarray(scorer.predict(list(PROBE_PAIRS), batch_size=8), dtype=np.float64)
    alone = np.concatenate([np.atleast_1d(scorer.predict([p])).reshape(-1) for p in PROBE_PAIRS])
    return {
        "probe_pairs": len(PROBE_PAIRS),
        "max_abs_diff": float(np.abs(got - expected).max()),
        "mean_abs_diff": float(np.abs(got - expected).mean()),
        "max_abs_diff_alone_vs_batch": float(np.abs(alone - got.reshape(-1)).max()),
    }


def bf16_parity(bundle: Path, kind: str, threads: int | None = None) -> dict:
    """``precision="bf16"`` against the bundle's own fp32 (onnxruntime) on the probe set, on this machine
    (raises :class:`~simkernel.errors.PrecisionUnavailableError` where bf16 cannot run)."""
    expected = probe_outputs(bundle, "fp32", kind, threads or 1)
    return compare(bundle, "bf16", kind, expected, threads or 1)
