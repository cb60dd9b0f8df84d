"""BERTScore baselines: bert_score's baseline files, rescaling, and a baseline for any model from a corpus.

A baseline file (bert_score's ``rescale_baseline/{lang}/{model}.tsv``; despite the name, comma-separated)
has the header ``LAYER,P,R,F`` and one row per layer, the embedding output first: row L holds the mean
P, R and F of BERTScore at layer L over random pairs of unrelated sentences. Rescaling maps a raw score x
to ``(x - b) / (1 - b)`` with b the baseline of the same layer and column, so unrelated texts score about 0
and identical texts 1 (Zhang et al. 2020, appendix; bert_score's ``rescale_with_baseline``). bert_score
reads the row at position ``num_layers`` (``iloc``), not the row whose LAYER equals it; so does this module.

:func:`corpus_pairs` and :func:`mean_per_layer` follow bert_score's published method
(``get_rescale_baseline.py``): keep the corpus lines of fewer than 32 space-separated words, draw two
disjoint random halves of them (without replacement), pair them, score every pair at every layer with idf
off, and average P, R and F per layer. The files of bert-score 0.3.13 are shipped in ``rescale_baseline/``
beside this module (MIT licence, its text there).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BASELINE_HEADER",
    "baseline_file",
    "layer_baseline",
    "compute_baseline",
    "MAX_BASELINE_WORDS",
    "corpus_pairs",
    "packaged_baseline_path",
    "read_baseline",
    "rescale",
    "write_baseline",
]

BASELINE_HEADER = ("LAYER", "P", "R", "F")
MAX_BASELINE_WORDS = 32  # bert_score keeps corpus lines of fewer space-separated words than this
PACKAGED_BASELINES = Path(__file__).with_name("rescale_baseline")


def packaged_baseline_path(lang: str, model: str) -> str:
    """Where bert_score's own file for ``model`` in ``lang`` lies in this package (it may not exist)."""
    return os.fspath(PACKAGED_BASELINES / lang / f"{model}.tsv")


def baseline_file(baseline_path: str | os.PathLike[str] | None, lang: str | None, model: str) -> str:
    """``baseline_path`` when given, else where bert_score's own file for ``model`` in ``lang`` lies here."""
    return os.fspath(baseline_path) if baseline_path is not None else packaged_baseline_path(str(lang), model)


def layer_baseline(path: str, layer: int | None) -> np.ndarray:
    """The baseline of ``layer`` in the file at ``path``: its (3,) row, or with ``layer`` None every row as
    (layers, 1, 3), broadcasting over (layers, pairs, 3) scores."""
    table = read_baseline(path)
    return table[:, np.newaxis, :] if layer is None else baseline_row(table, layer, path)


def read_baseline(path: str | os.PathLike[str]) -> np.ndarray:
    """The (layers, 3) float32 table of P, R, F baselines in a bert_score baseline file, row L = layer L.

    ``ValueError`` names the file and what is wrong with it (no header ``LAYER,P,R,F``, a row that is not
    four numbers); ``FileNotFoundError`` if there is no file.
    """
    text = Path(path).read_text(encoding="utf-8")
    rows = [row for row in csv.reader(io.StringIO(text)) if row]
    if not rows or [cell.strip() for cell in rows[0]] != list(BASELINE_HEADER):
        raise ValueError(
            f"{os.fspath(path)!r} is not a BERTScore baseline file: its first line must be {','.join(BASELINE_HEADER)} (bert_score's format; `simkernel bertscore-baseline` writes one)"
        )
    try:
        table = np.array([[float(cell) for cell in row[1:]] for row in rows[1:]], dtype=np.float64)
    except ValueError:
        raise ValueError(
            f"{os.fspath(path)!r}: every row after the header must be LAYER,P,R,F numbers"
        ) from None
    if table.ndim != 2 or table.shape[1] != 3 or table.shape[0] == 0:
        raise ValueError(f"{os.fspath(path)!r}: every row after the header must be LAYER,P,R,F numbers")
    return table.astype(np.float32)


def baseline_row(table: np.ndarray, layer: int, path: str) -> np.ndarray:
    """Row ``layer`` of a baseline table (bert_score's ``iloc[num_layers]``); ValueError if it has none."""
    if not 0 <= layer < table.shape[0]:
        raise ValueError(
            f"the baseline file {path!r} has rows for layers 0 to {table.shape[0] - 1}, not layer {layer}: compute one for this model with `simkernel bertscore-baseline`"
        )
    return table[layer]


def rescale(scores: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    """``(scores - b) / (1 - b)`` in float32; ``scores`` (..., 3) of P, R, F and ``baseline`` broadcasting
    to it (a (3,) row, or (layers, 1, 3) for every layer), as bert_score's float32 tensors compute it."""
    scores = np.asarray(scores, dtype=np.float32)
    baseline = np.asarray(baseline, dtype=np.float32)
    return ((scores - baseline) / (np.float32(1) - baseline)).astype(np.float32)


def write_baseline(path: str | os.PathLike[str], means: np.ndarray) -> None:
    """Writes (layers, 3) means as a bert_score baseline file (each float32 as its shortest repr, as
    bert_score's ``DataFrame.to_csv`` writes them)."""
    means = np.asarray(means, dtype=np.float32)
    lines = [",".join(BASELINE_HEADER)]
    lines += [f"{layer}," + ",".join(str(value) for value in row) for layer, row in enumerate(means)]
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def corpus_pairs(lines: Sequence[str], pairs: int | None, seed: int) -> tuple[list[str], list[str]]:
    """bert_score's random pairs of a monolingual corpus: the stripped non-empty lines of fewer than
    :data:`MAX_BASELINE_WORDS` words, two disjoint random halves (at most ``pairs`` pairs each when given)."""
    kept = [line.strip() for line in lines]
    kept = [line for line in kept if line and len(line.split(" ")) < MAX_BASELINE_WORDS]
    half = len(kept) // 2
    if pairs is not None:
        half = min(half, pairs)
    if half < 1:
        raise ValueError(
            f"a baseline needs at least 2 corpus lines of fewer than {MAX_BASELINE_WORDS} words; the corpus has {len(kept)}"
        )
    chosen = np.random.default_rng(seed).choice(len(kept), size=(2, half), replace=False)
    return [kept[i] for i in chosen[0]], [kept[i] for i in chosen[1]]


def compute_baseline(
    encoder: Any, lines: Sequence[str], *, pairs: int | None, seed: int, chunk: int = 1000
) -> np.ndarray:
    """A baseline table (layers, 3) for ``encoder``'s model from a corpus, by bert_score's method: the
    random pairs of :func:`corpus_pairs`, scored at every layer with idf off, ``chunk`` pairs at a time,
    averaged per layer (float64 sums over all pairs)."""
    from simkernel.scoring.bertscore.matching import score_pairs

    hyps, refs = corpus_pairs(lines, pairs, seed)
    sums = np.zeros((encoder.num_layers + 1, 3), dtype=np.float64)
    for start in range(0, len(hyps), chunk):
        result = score_pairs(encoder, hyps[start : start + chunk], refs[start : start + chunk], layer=None)
        sums += result.scores.astype(np.float64).sum(axis=1)
    return (sums / len(hyps)).astype(np.float32)
