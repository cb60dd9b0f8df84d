"""Confusion counts and agreement statistics of "score >= threshold" against binary labels (numpy float64).

:func:`sweep` evaluates every useful threshold at once: one per distinct score, each classifying the
scores at or above it as positive. :func:`threshold_stats` gives precision, recall, F1, Cohen's kappa and
Youden's J from confusion counts (vectorised). Conventions follow scikit-learn's ``precision_score``,
``recall_score``, ``f1_score`` (``zero_division=0``: a ratio with a zero denominator is 0.0) and
``cohen_kappa_score`` (unweighted), which the tests check them against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Sweep:
    """Confusion counts for each candidate threshold, highest candidate first.

    ``candidates[k]`` is the k-th largest distinct score; at it, the scores ``>= candidates[k]`` are
    predicted positive, giving ``tp[k]`` true and ``fp[k]`` false positives. ``positives`` and
    ``negatives`` count the labels; ``tn = negatives - fp``, ``fn = positives - tp``.
    """

    candidates: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    positives: int
    negatives: int

    def cut(self, k: int) -> float:
        """A threshold that splits the scores as ``candidates[k]`` does, half-way to the next lower
        distinct score (the widest margin on both sides); ``candidates[k]`` itself for the lowest one."""
        high = float(self.candidates[k])
        if k + 1 >= self.candidates.size:
            return high
        middle = (high + float(self.candidates[k + 1])) / 2.0
        return middle if float(self.candidates[k + 1]) < middle <= high else high


def sweep(scores: np.ndarray, positive: np.ndarray) -> Sweep:
    """The confusion counts at every distinct score of ``scores`` (float64, 1-d) for the boolean
    ``positive`` labels of the same length. O(n log n): one stable sort, two cumulative sums."""
    order = np.argsort(-scores, kind="stable")
    ordered = scores[order]
    hits = positive[order].astype(np.int64)
    tp_all = np.cumsum(hits)
    fp_all = np.arange(1, scores.size + 1, dtype=np.int64) - tp_all
    # the last index of each run of equal scores: a threshold cannot split equal scores
    last = np.flatnonzero(np.r_[ordered[1:] != ordered[:-1], True])
    positives = int(tp_all[-1])
    return Sweep(ordered[last], tp_all[last], fp_all[last], positives, int(scores.size) - positives)


@dataclass(frozen=True)
class ThresholdStats:
    """How "score >= threshold" agrees with the binary labels: precision, recall (true positive rate),
    F1, Cohen's kappa and Youden's J (true positive rate minus false positive rate), all in [0, 1]
    except kappa and J in [-1, 1]."""

    threshold: float
    precision: float
    recall: float
    f1: float
    kappa: float
    youden_j: float

    def as_dict(self) -> dict[str, float]:
        return {
            "threshold": self.threshold,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "kappa": self.kappa,
            "youden_j": self.youden_j,
        }


def rates(tp, fp, positives: int, negatives: int) -> dict[str, np.ndarray]:
    """Precision, recall, F1, kappa and Youden's J (float64 arrays) from true / false positive counts."""
    tp = np.asarray(tp, dtype=np.float64)
    fp = np.asarray(fp, dtype=np.float64)
    fn = positives - tp
    tn = negatives - fp
    n = float(positives + negatives)
    predicted = tp + fp
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, 0.0)
        recall = tp / positives if positives else np.zeros_like(tp)
        f1_denominator = 2 * tp + fp + fn
        f1 = np.where(f1_denominator > 0, 2 * tp / f1_denominator, 0.0)
        observed = (tp + tn) / n
        expected = (predicted * positives + (fn + tn) * negatives) / (n * n)
        kappa = np.where(expected < 1, (observed - expected) / (1 - expected), 0.0)
        false_positive_rate = fp / negatives if negatives else np.zeros_like(fp)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "kappa": kappa,
        "youden_j": recall - false_positive_rate,
    }


def stats_at(table: Sweep, k: int) -> ThresholdStats:
    """The statistics of candidate ``k`` of ``table``, with its threshold (:meth:`Sweep.cut`)."""
    values = rates(table.tp[k], table.fp[k], table.positives, table.negatives)
    return ThresholdStats(threshold=table.cut(k), **{name: float(v) for name, v in values.items()})


def stats_of(scores, positive, threshold: float) -> ThresholdStats:
    """The statistics of "score >= threshold" for any threshold (e.g. a fixed 0.7, for comparison)."""
    values = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(positive, dtype=bool)
    predicted = values >= threshold
    tp = int(np.count_nonzero(predicted & labels))
    fp = int(np.count_nonzero(predicted & ~labels))
    positives = int(np.count_nonzero(labels))
    figures = rates(tp, fp, positives, labels.size - positives)
    return ThresholdStats(threshold=float(threshold), **{name: float(v) for name, v in figures.items()})
