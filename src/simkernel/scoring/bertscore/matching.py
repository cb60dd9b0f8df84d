"""BERTScore of text pairs: token vectors from the model, greedy matching in the native kernel.

For each (candidate, reference) pair, with the token vectors of one layer L2-normalised (bert_score:
``emb.div_(torch.norm(emb, dim=-1))``) and s[i, j] the cosine of candidate token i and reference token j:

- P = sum_i w_i max_j s[i, j] / sum_i w_i over the candidate's tokens, R the same over the reference's
  tokens with max_i, and F = 2PR / (P + R), 0 where that is NaN (bert_score's ``masked_fill``);
- every token, special ones included, takes part in the maxima; the weights (:mod:`.idf`) weigh the means;
- a text that encodes to no more tokens than the empty text does ([CLS] [SEP]: bert_score's "empty
  sentence", ``masks.sum(dim=1).eq(2)``) makes its pair's P, R and F 0;
- several references for a candidate: each of P, R and F is the max over the references, each on its
  own (bert_score's ``all_preds[beg:end].max(dim=0)``; so P and R may come from different references);
- all layers: the same per layer, giving (layers, pairs) arrays.

Unlike bert_score, nothing is padded: its padded batches compare a token with the zero similarities of
padding, which raises a negative best match to 0 for every pair but the batch's longest; here a pair's
scores depend on its own texts only, whatever else is in the call. The matching runs in
:func:`simkernel.kernels.greedy_match` (float32 dot products, float64 weighted sums); the texts of a call
are encoded once each (duplicates share one encoding, as in bert_score).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simkernel.scoring.bertscore.idf import Weights

__all__ = ["PairScores", "best_over_groups", "score_pairs"]


@dataclass(frozen=True)
class PairScores:
    """P, R, F of each pair: ``scores`` float32 (pairs, 3), or (layers, pairs, 3) for every layer; how many
    pairs had an empty candidate / reference / either (``empty_pairs``: the pairs scored 0, a pair with both
    texts empty counted once), and the distinct texts that were truncated (``truncated``: their
    :func:`~simkernel.runtime.inference.disk_cache.text_digest`, so that counts from several calls or
    processes can be merged without counting a text twice)."""

    scores: np.ndarray
    empty_candidates: int
    empty_references: int
    empty_pairs: int
    truncated: frozenset[bytes]

    @property
    def truncated_texts(self) -> int:
        """How many distinct texts of the call were truncated (a text in several passes counts once)."""
        return len(self.truncated)


def _unique_texts(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct texts in first-seen order, and the position of each text among them."""
    positions: dict[str, int] = {}
    index = np.fromiter((positions.setdefault(text, len(positions)) for text in texts), np.int64, len(texts))
    return list(positions), index


PAIRS_PER_PASS = 1024  # pairs encoded and matched at a time: bounds the token vectors held at once


def score_pairs(
    encoder: Any,
    candidates: Sequence[str],
    references: Sequence[str],
    *,
    layer: int | None,
    weights: Weights | None = None,
    pairs_per_pass: int = PAIRS_PER_PASS,
) -> PairScores:
    """BERTScore of ``candidates[i]`` against ``references[i]`` on ``encoder`` (a
    :class:`~simkernel.runtime.TokenEncoder`) at ``layer`` (None: every layer, the embedding output
    first). ``weights`` None: 1 for every token, 0 for the cls and sep tokens (idf off).

    The pairs are scored ``pairs_per_pass`` at a time, so the token vectors held at once are those of at
    most 2 x ``pairs_per_pass`` texts (about 150 MB for 1,024 pairs of 256-token texts at 384 dimensions,
    whatever the number of pairs); a text repeated in two passes is encoded in each (and, if truncated,
    counted once)."""
    from simkernel.scoring.bertscore.idf import plain_weights

    if len(candidates) != len(references):
        raise ValueError(
            f"Different number of candidates and references: {len(candidates)} candidates, {len(references)} references"
        )
    if weights is None:
        weights = plain_weights([encoder.cls_id, encoder.sep_id])
    passes = [
        _score_pass(
            encoder,
            candidates[start : start + pairs_per_pass],
            references[start : start + pairs_per_pass],
            layer,
            weights,
        )
        for start in range(0, len(candidates), pairs_per_pass)
    ]
    if not passes:
        shape = (encoder.num_layers + 1, 0, 3) if layer is None else (0, 3)
        return PairScores(np.zeros(shape, dtype=np.float32), 0, 0, 0, frozenset())
    return PairScores(
        np.concatenate([p.scores for p in passes], axis=-2),
        sum(p.empty_candidates for p in passes),
        sum(p.empty_references for p in passes),
        sum(p.empty_pairs for p in passes),
        frozenset().union(*(p.truncated for p in passes)),
    )


def _score_pass(
    encoder: Any, candidates: Sequence[str], references: Sequence[str], layer: int | None, weights: Weights
) -> PairScores:
    """:func:`score_pairs` of one pass: its distinct texts encoded once, then matched in the kernel."""
    from simkernel.kernels import greedy_match, normalize
    from simkernel.runtime.inference.disk_cache import text_digest

    n = len(candidates)
    texts, index = _unique_texts([*candidates, *references])
    batch = encoder.encode(texts, layer=layer)
    offsets = np.asarray(batch.offsets, dtype=np.int64)
    token_weights = weights.lookup(batch.token_ids)
    pairs = np.stack([index[:n], index[n:]], axis=1)
    stacked = batch.vectors if layer is None else batch.vectors[np.newaxis]
    scores = np.empty((stacked.shape[0], n, 3), dtype=np.float32)
    for position, vectors in enumerate(stacked):
        unit = normalize(vectors)
        p, r, f = greedy_match(unit, offsets, unit, offsets, pairs, token_weights, token_weights)
        scores[position, :, 0], scores[position, :, 1], scores[position, :, 2] = p, r, f
    empty = np.diff(offsets) <= encoder.empty_length
    empty_candidate, empty_reference = empty[pairs[:, 0]], empty[pairs[:, 1]]
    empty_pair = empty_candidate | empty_reference
    scores[:, empty_pair, :] = 0.0
    return PairScores(
        scores if layer is None else scores[0],
        int(empty_candidate.sum()),
        int(empty_reference.sum()),
        int(empty_pair.sum()),
        frozenset(text_digest(texts[i]) for i in np.flatnonzero(batch.truncated)),
    )


def best_over_groups(scores: np.ndarray, group_sizes: Sequence[int]) -> np.ndarray:
    """Each group's max of P, R and F taken column by column, over consecutive rows of ``scores``
    ((pairs, 3) or (layers, pairs, 3)); ``group_sizes`` must be positive and sum to the number of pairs."""
    sizes = np.asarray(group_sizes, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    return np.maximum.reduceat(scores, starts, axis=-2)
