"""int8 and bf16 BERTScore against fp32 on the labelled SAS pairs: stated bounds on |F - F_fp32| and on
the change of Spearman's rho with the human labels, per model (:data:`BOUNDS`).

Measured (AMD EPYC, AVX2 without VNNI): all-MiniLM-L6-v2 layer 4, the 5,022 pairs: int8 max |dF| 0.020,
mean 0.0034, rho 0.4613 -> 0.4605; all-mpnet-base-v2 layer 12 (its last, the largest int8 error of its
layers measured), every third pair (1,674): max 0.056, mean 0.0101, rho 0.4307 -> 0.4294 (layer 4: 0.039,
0.0061, 0.4404 -> 0.4369). onnxruntime's int8 products differ between AVX2 and VNNI CPUs, hence the
margins. The bounds can fail: rounding the fp32 token vectors to whole numbers (a mutant of the vectors;
they reach about 10) breaks them, checked below.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from simkernel.bert_score import BERTScorer

LAYER = 4


@dataclass(frozen=True)
class Bounds:
    """A model's stated bounds of int8 / bf16 against fp32 at ``layer``, on every ``step``-th SAS pair."""

    layer: int
    step: int
    max_abs_f: float  # per pair
    mean_abs_f: float  # over the pairs
    max_rho_change: float  # Spearman's rho with the human labels


BOUNDS = {
    "sentence-transformers/all-MiniLM-L6-v2": Bounds(LAYER, 1, 0.05, 0.01, 0.01),
    "sentence-transformers/all-mpnet-base-v2": Bounds(12, 3, 0.08, 0.02, 0.01),
}
MINILM_BOUNDS = BOUNDS["sentence-transformers/all-MiniLM-L6-v2"]


def f_scores(model_id, pairs, precision: str, transform=None, layer: int = LAYER) -> np.ndarray:
    scorer = BERTScorer(model_type=model_id, num_layers=layer, precision=precision)
    if transform is not None:
        encode = scorer._encoder.encode

        def rounded(texts, layer, **kwargs):
            batch = encode(texts, layer, **kwargs)
            batch.vectors[...] = transform(batch.vectors)
            return batch

        scorer._encoder = _Wrapped(scorer._encoder, rounded)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return np.asarray(scorer.score([p[1] for p in pairs], [p[0] for p in pairs])[2], dtype=np.float64)


class _Wrapped:
    def __init__(self, encoder, encode) -> None:
        self._encoder, self.encode = encoder, encode

    def __getattr__(self, name):
        return getattr(self._encoder, name)


@pytest.fixture(scope="module")
def fp32(model_id, sas_pairs) -> np.ndarray:
    return f_scores(model_id, sas_pairs, "fp32")


def check_within_bounds(
    scores: np.ndarray, fp32: np.ndarray, labels: list[float], bounds: Bounds = MINILM_BOUNDS
) -> None:
    change = np.abs(scores - fp32)
    rho_change = abs(stats.spearmanr(scores, labels)[0] - stats.spearmanr(fp32, labels)[0])
    assert change.max() <= bounds.max_abs_f, f"max |F - F_fp32| = {change.max():.4f}"
    assert change.mean() <= bounds.mean_abs_f, f"mean |F - F_fp32| = {change.mean():.4f}"
    assert rho_change <= bounds.max_rho_change, f"Spearman change {rho_change:.4f}"


def test_int8_stays_within_its_bounds(model_id, sas_pairs, fp32):
    check_within_bounds(f_scores(model_id, sas_pairs, "int8"), fp32, [p[2] for p in sas_pairs])


def test_mpnet_int8_stays_within_its_bounds(mpnet_checkpoint, sas_pairs):
    model = "sentence-transformers/all-mpnet-base-v2"
    bounds = BOUNDS[model]
    pairs = sas_pairs[:: bounds.step]
    fp32 = f_scores(model, pairs, "fp32", layer=bounds.layer)
    int8 = f_scores(model, pairs, "int8", layer=bounds.layer)
    check_within_bounds(int8, fp32, [p[2] for p in pairs], bounds)


def test_bf16_stays_within_its_bounds(model_id, sas_pairs, fp32):
    from simkernel.runtime.inference.bf16 import cpu_bf16_reason, openvino_reason

    reason = cpu_bf16_reason() or openvino_reason()
    if reason:
        pytest.skip(f"bf16 is not available here: {reason}")
    check_within_bounds(f_scores(model_id, sas_pairs, "bf16"), fp32, [p[2] for p in sas_pairs])


def test_the_bounds_can_fail_rounded_token_vectors_break_them(model_id, sas_pairs, fp32):
    rounded = f_scores(model_id, sas_pairs, "fp32", transform=np.rint)
    with pytest.raises(AssertionError, match=r"\|F - F_fp32\|"):
        check_within_bounds(rounded, fp32, [p[2] for p in sas_pairs])
