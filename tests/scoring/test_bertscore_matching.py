"""score_pairs (the core's BERTScore of text pairs) against float64 numpy on the vectors of a stand-in
encoder: every token in the maxima, weights in the means, empty texts 0, duplicates encoded once, every
layer, and a pair's scores independent of its batch-mates."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from simkernel.scoring.bertscore.idf import document_frequency_idf, ids_and_offsets, plain_weights
from simkernel.scoring.bertscore.matching import score_pairs

CLS, SEP = 101, 102


@dataclass
class Batch:
    vectors: np.ndarray
    offsets: np.ndarray
    token_ids: np.ndarray
    truncated: np.ndarray


class StandInEncoder:
    """Token ids: [CLS] + one id per word (hash) + [SEP]; vectors: a fixed random vector per (layer, id,
    position) pair, so they are contextual enough to differ by position."""

    num_layers = 3
    cls_id, sep_id = CLS, SEP
    empty_length = 2
    max_words = 20

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def tokenize(self, texts):
        return [
            np.array(
                [CLS, *[1000 + sum(map(ord, w)) % 500 for w in t.split()[: self.max_words]], SEP],
                dtype=np.int64,
            )
            for t in texts
        ]

    def vector(self, layer, token, position):
        return (
            np.random.default_rng([layer, int(token), position]).standard_normal(8).astype(np.float32) + 0.3
        )

    def encode(self, texts, layer):
        self.calls.append(list(texts))
        ids = self.tokenize(texts)
        token_ids, offsets = ids_and_offsets(ids)
        layers = range(self.num_layers + 1) if layer is None else [layer]
        vectors = np.stack(
            [np.stack([self.vector(k, t, p) for seq in ids for p, t in enumerate(seq)]) for k in layers]
        )
        truncated = np.array([len(t.split()) > self.max_words for t in texts])
        return Batch(vectors if layer is None else vectors[0], offsets, token_ids, truncated)


def reference(encoder, cand, ref, layer, weight_of) -> np.ndarray:
    """bert_score's formula in float64 for one pair (empty texts 0)."""
    c_ids, r_ids = encoder.tokenize([cand, ref])
    if len(c_ids) <= 2 or len(r_ids) <= 2:
        return np.zeros(3)
    c = np.stack([encoder.vector(layer, t, p) for p, t in enumerate(c_ids)]).astype(np.float64)
    r = np.stack([encoder.vector(layer, t, p) for p, t in enumerate(r_ids)]).astype(np.float64)
    sim = (c / np.linalg.norm(c, axis=1, keepdims=True)) @ (r / np.linalg.norm(r, axis=1, keepdims=True)).T
    wc, wr = weight_of(c_ids), weight_of(r_ids)
    p = (sim.max(axis=1) * wc).sum() / wc.sum()
    r_ = (sim.max(axis=0) * wr).sum() / wr.sum()
    return np.array([p, r_, 2 * p * r_ / (p + r_)])


CANDS = ["the cat sat", "a dog", "", "the cat sat", "words " * 30, "one two three four"]
REFS = ["a cat sat down", "the dog barked", "anything", "a cat sat down", "words " * 25, "   "]


@pytest.mark.parametrize("layer", [0, 2, 3])
def test_plain_weights_match_the_float64_formula(layer):
    encoder = StandInEncoder()
    result = score_pairs(encoder, CANDS, REFS, layer=layer)
    weight = plain_weights([CLS, SEP])
    expected = np.stack(
        [reference(encoder, c, r, layer, weight.lookup) for c, r in zip(CANDS, REFS, strict=True)]
    )
    np.testing.assert_allclose(result.scores, expected, rtol=0, atol=2e-6)
    assert (result.empty_candidates, result.empty_references, result.truncated_texts) == (1, 1, 2)
    assert encoder.calls == [list(dict.fromkeys(CANDS + REFS))]  # each distinct text encoded once


@pytest.mark.parametrize("pairs_per_pass", [1, 2, 1024])
def test_empty_pairs_count_a_pair_with_both_texts_empty_once(pairs_per_pass):
    cands = ["", "", "a cat", " ", "a cat", ""]
    refs = ["", "a dog", "", "\t", "a dog", ""]
    result = score_pairs(StandInEncoder(), cands, refs, layer=1, pairs_per_pass=pairs_per_pass)
    empty = [not c.split() or not r.split() for c, r in zip(cands, refs, strict=True)]
    assert (result.empty_candidates, result.empty_references) == (4, 4)
    assert result.empty_pairs == sum(empty) == 5
    assert ((result.scores == 0).all(axis=1) == np.array(empty)).all()


def test_idf_weights_and_every_layer():
    encoder = StandInEncoder()
    weights = document_frequency_idf(*ids_and_offsets(encoder.tokenize(REFS)))
    result = score_pairs(encoder, CANDS, REFS, layer=None, weights=weights)
    assert result.scores.shape == (4, len(CANDS), 3)
    for layer in range(4):
        expected = np.stack(
            [reference(encoder, c, r, layer, weights.lookup) for c, r in zip(CANDS, REFS, strict=True)]
        )
        np.testing.assert_allclose(result.scores[layer], expected, rtol=0, atol=2e-6)


def test_a_pairs_scores_do_not_depend_on_its_batch_mates():
    together = score_pairs(StandInEncoder(), CANDS, REFS, layer=1).scores
    for i, (c, r) in enumerate(zip(CANDS, REFS, strict=True)):
        np.testing.assert_array_equal(score_pairs(StandInEncoder(), [c], [r], layer=1).scores[0], together[i])


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="Different number of candidates and references: 2 candidates, 1"):
        score_pairs(StandInEncoder(), ["a", "b"], ["c"], layer=0)


@pytest.mark.parametrize("pairs_per_pass", [1, 2, 4])
def test_passes_give_the_scores_of_one_pass(pairs_per_pass):
    whole = score_pairs(StandInEncoder(), CANDS, REFS, layer=None)
    split = score_pairs(StandInEncoder(), CANDS, REFS, layer=None, pairs_per_pass=pairs_per_pass)
    np.testing.assert_array_equal(split.scores, whole.scores)
    assert (split.empty_candidates, split.empty_references, split.empty_pairs) == (
        whole.empty_candidates,
        whole.empty_references,
        whole.empty_pairs,
    )
    assert split.truncated_texts == whole.truncated_texts == 2
    encoder = StandInEncoder()
    score_pairs(encoder, CANDS, REFS, layer=1, pairs_per_pass=pairs_per_pass)
    assert max(len(call) for call in encoder.calls) <= 2 * pairs_per_pass


@pytest.mark.parametrize("pairs_per_pass", [1, 2, 5])
def test_a_truncated_text_in_several_passes_counts_once(pairs_per_pass):
    long, other = "words " * 30, "more words " * 15
    cands = [long, "a dog", long, "the cat", long]
    refs = ["x y", long, "z", other, "w"]
    result = score_pairs(StandInEncoder(), cands, refs, layer=1, pairs_per_pass=pairs_per_pass)
    assert result.truncated_texts == 2  # long (in every pass) and other
