"""Token weights of BERTScore: inverse document frequency as bert_score computes it, or plain weights.

bert_score 0.3.13 (``get_idf_dict``) counts, for each token id, the number of sentences that contain it
(each sentence counted once, its special tokens included) and weighs a token ``log((M + 1) / (c + 1))``:
M sentences, c of them holding the token; a token no sentence holds weighs ``log(M + 1)``. The special
tokens that every encoded sentence holds ([CLS] and [SEP], or ``<s>`` and ``</s>``) therefore weigh 0. With
idf off a token weighs 1, except the tokenizer's cls and sep tokens, which weigh 0.

Here the counts are one ``numpy.unique`` over (sentence, token) keys and one ``bincount``, with no Python
loop per token or per sentence: a million sentences take about a second after tokenization. Weights are
float64 here (bert_score keeps Python floats) and become float32 where the kernel reads them, as bert_score
pads them into a float32 tensor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "MappedWeights",
    "TokenWeights",
    "Weights",
    "document_frequency_idf",
    "ids_and_offsets",
    "plain_weights",
]


@dataclass(frozen=True)
class TokenWeights:
    """Weights by token id: ``table[id]`` for ids below ``len(table)``, ``default`` for any other id."""

    table: np.ndarray  # float64, indexed by token id
    default: float

    def lookup(self, token_ids: np.ndarray) -> np.ndarray:
        """float32 weight of each id of ``token_ids`` (int64, any shape)."""
        ids = np.asarray(token_ids, dtype=np.int64)
        inside = (ids >= 0) & (ids < self.table.size)
        weights = np.full(ids.shape, self.default, dtype=np.float64)
        weights[inside] = self.table[ids[inside]]
        return weights.astype(np.float32)

    def as_dict(self) -> dict[int, float]:
        """The weights as bert_score's idf dict holds them (ids that have a weight of their own)."""
        return {int(i): float(w) for i, w in enumerate(self.table) if w != self.default}


def plain_weights(special_ids: Iterable[int]) -> TokenWeights:
    """Weight 1 for every token, 0 for ``special_ids`` (bert_score with idf off: cls and sep)."""
    specials = [int(i) for i in special_ids if i is not None and int(i) >= 0]
    table = np.ones(max(specials, default=-1) + 1, dtype=np.float64)
    table[specials] = 0.0
    return TokenWeights(table, 1.0)


def ids_and_offsets(token_lists: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The token ids of several texts as one int64 array, and the (texts + 1) offsets of each text's ids."""
    lengths = np.fromiter((len(ids) for ids in token_lists), np.int64, len(token_lists))
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    if not token_lists:
        return np.zeros(0, dtype=np.int64), offsets
    return np.concatenate(token_lists).astype(np.int64, copy=False), offsets


def document_frequency_idf(token_ids: np.ndarray, offsets: np.ndarray) -> TokenWeights:
    """bert_score's idf over M sentences given as one array of token ids (int64) and their offsets (M + 1).

    ``log((M + 1) / (c + 1))`` for a token held by c sentences (counted once per sentence), and
    ``log(M + 1)`` for every other id.
    """
    token_ids = np.asarray(token_ids, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    documents = offsets.size - 1
    if documents < 0 or (token_ids.size and token_ids.min() < 0):
        raise ValueError("idf needs non-negative token ids and M + 1 offsets for M sentences")
    size = int(token_ids.max()) + 1 if token_ids.size else 0
    sentence = np.repeat(np.arange(documents, dtype=np.int64), np.diff(offsets))
    keys = np.unique(sentence * max(size, 1) + token_ids)  # one key per (sentence, token) held
    counts = np.bincount(keys % max(size, 1), minlength=size).astype(np.float64)
    table = np.log((documents + 1) / (counts + 1))
    return TokenWeights(table, float(np.log(documents + 1)))


@dataclass(frozen=True)
class MappedWeights:
    """A user's idf dict (bert_score's ``idf=`` a dict), looked up once per distinct id of a call.

    A ``defaultdict`` gives its default to the ids it lacks, as bert_score's lookup does; any other mapping
    lacking an id raises ``KeyError`` naming the id (bert_score raises a bare KeyError).
    """

    mapping: Mapping[Any, float]

    def lookup(self, token_ids: np.ndarray) -> np.ndarray:
        """float32 weight of each id of ``token_ids`` (int64, any shape)."""
        ids, positions = np.unique(np.asarray(token_ids, dtype=np.int64), return_inverse=True)
        values = np.empty(ids.size, dtype=np.float64)
        for k, token in enumerate(ids.tolist()):
            try:
                values[k] = float(self.mapping[token])
            except KeyError:
                raise KeyError(
                    f"the idf dict has no weight for token id {token}: give a collections.defaultdict, or let BERTScorer(idf=True, idf_sents=...) compute the weights"
                ) from None
        return values[positions].reshape(np.shape(token_ids)).astype(np.float32)


Weights = TokenWeights | MappedWeights
