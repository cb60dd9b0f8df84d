"""Parity of a bundle's graph against a reference on the probe set, the bundle loaded as users load it.

The exporter compares each graph it writes with sentence-transformers run in torch on the same checkpoint
(:class:`Reference`, the ``export`` extra; tolerances :data:`PARITY_TOLERANCE`, a miss raises
:class:`ParityError`); ``simkernel models info`` compares ``precision="bf16"`` with the bundle's own fp32
on this machine (:func:`bf16_parity`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simkernel._optional import import_optional
from simkernel.cpu_budget import available_cpus
from simkernel.errors import ModelError
from simkernel.runtime.acquisition.export_probes import PROBE_PAIRS, PROBE_TEXTS
from simkernel.runtime.inference.cross_encoder import BundleCrossEncoder
from simkernel.runtime.inference.text_encoder import BundleTextEncoder

# Parity tolerances of an export (checked on the finished bundle vs sentence-transformers in torch):
# bi-encoders: minimum cosine between simkernel's and sentence-transformers' embeddings;
# cross-encoders: maximum |difference| of the activated scores.
PARITY_TOLERANCE = {
    ("bi-encoder", "fp32"): {"min_cosine": 0.99999},
    ("bi-encoder", "int8"): {"min_cosine": 0.97},
    ("cross-encoder", "fp32"): {"max_abs_diff": 1e-4},
    ("cross-encoder", "int8"): {"max_abs_diff": 0.05},
}


class ParityError(ModelError):
    """A graph does not reproduce its reference within tolerance; nothing was written."""


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


class Reference:
    """sentence-transformers on the checkpoint (torch, fp32), run once per export on the probe set."""

    def __init__(self, src: Path, kind: str) -> None:
        st = import_optional("sentence_transformers", "export", "checking an export's parity")
        import_optional("torch", "export", "checking an export's parity").set_num_threads(
            min(4, available_cpus())
        )
        self.kind = kind
        if kind == "bi-encoder":
            model = st.SentenceTransformer(str(src), device="cpu")
            self.expected = model.encode(
                list(PROBE_TEXTS), batch_size=8, normalize_embeddings=True, convert_to_numpy=True
            ).astype(np.float64)
        else:
            model = st.CrossEncoder(str(src), device="cpu")
            self.expected = np.asarray(model.predict(list(PROBE_PAIRS), batch_size=8), dtype=np.float64)

    def compare(self, bundle: Path, precision: str) -> dict:
        """Parity figures of the bundle's ``precision`` graph, loaded the way users load it."""
        return compare(bundle, precision, self.kind, self.expected)


def passes(figures: dict, tol: dict) -> bool:
    """Whether parity ``figures`` are within the tolerance ``tol`` (keys as in :data:`PARITY_TOLERANCE`)."""
    if "min_cosine" in tol and not figures["min_cosine"] >= tol["min_cosine"]:
        return False
    return not ("max_abs_diff" in tol and not figures["max_abs_diff"] <= tol["max_abs_diff"])


def rounded(figures: dict) -> dict:
    """``figures`` with floats at 7 significant digits, for messages."""
    return {k: (float(f"{v:.7g}") if isinstance(v, float) else v) for k, v in figures.items()}
