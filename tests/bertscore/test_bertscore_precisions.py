"""int8 and bf16 BERTScore against fp32 on the 5,022 labelled SAS pairs (layer 4 of all-MiniLM-L6-v2):
stated bounds on |F - F_fp32| and on the change of Spearman's rho with the human labels.

Measured (AMD EPYC, AVX2 without VNNI): int8 max |dF| 0.020, mean 0.0034, rho 0.4613 -> 0.4605. onnxruntime's
int8 products differ between AVX2 and VNNI CPUs, hence the margins. The bounds can fail: rounding the fp32
token vectors to whole numbers (a mutant of the vectors; they reach about 10) breaks them, checked below.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from simkernel.bert_score import BERTScorer

LAYER = 4
MAX_ABS_F = 0.05  # per pair
MEAN_ABS_F = 0.01  # over the pairs
MAX_RHO_CHANGE = 0.01  # Spearman's rho with the human labels


def f_scores(model_id, pairs, precision: str, transform=None) -> np.ndarray:
    scorer = BERTScorer(model_type=model_id, num_layers=LAYER, precision=precision)
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


def check_within_bounds(scores: np.ndarray, fp32: np.ndarray, labels: list[float]) -> None:
    change = np.abs(scores - fp32)
    rho_change = abs(stats.spearmanr(scores, labels)[0] - stats.spearmanr(fp32, labels)[0])
    assert change.max() <= MAX_ABS_F, f"max |F - F_fp32| = {change.max():.4f}"
    assert change.mean() <= MEAN_ABS_F, f"mean |F - F_fp32| = {change.mean():.4f}"
    assert rho_change <= MAX_RHO_CHANGE, f"Spearman change {rho_change:.4f}"


def test_int8_stays_within_its_bounds(model_id, sas_pairs, fp32):
    check_within_bounds(f_scores(model_id, sas_pairs, "int8"), fp32, [p[2] for p in sas_pairs])


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
