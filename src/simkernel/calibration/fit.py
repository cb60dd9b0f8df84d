"""``calibrate(scores, labels)``: the threshold on similarity scores that best reproduces human labels.

The labels are made binary (``label >= positive_from`` is a positive; by default ``positive_from`` is the
midpoint of the lowest and highest label, so 0/1/2 labels count 1 and 2 as positive and 0/1 labels count
1). Every distinct score is a candidate threshold ("score >= threshold" predicts a positive); the one with
the highest F1 is the result (ties: the highest threshold), reported half-way between its score and the
next lower distinct score, so it splits these scores the same way with the widest margin. Youden's J
(true positive rate minus false positive rate, the ROC point farthest above the diagonal) picks a second
threshold on the same candidates. The interval is a percentile bootstrap: the pairs are resampled with
replacement ``bootstrap`` times (each resample ``numpy.random.default_rng(seed).integers(0, n, n)``, drawn
in turn from one generator; resamples with a single class are skipped), the F1 threshold found on each,
and the 2.5th and 97.5th percentiles (numpy's linear interpolation) are the 95% interval.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simkernel.calibration.binary import ThresholdStats, rates, stats_at, sweep
from simkernel.stats.defaults import DEFAULT_BOOTSTRAP, DEFAULT_SEED, resamples_problem

INTERVAL_PERCENTILES = (2.5, 97.5)
# what the figures at the chosen threshold are (calibrate's printed report and its HTML report): the threshold
# was chosen on the same rows, so precision, recall and F1 there are optimistic (by 0.01-0.09 at 500-30 rows
# in benchmarks/interval_coverage.py --calibration) and their intervals hold for that threshold only
IN_SAMPLE_NOTE = (
    "in-sample: the threshold was chosen on these rows, so the figures at it are optimistic and their "
    "intervals hold for this threshold only; score other labelled rows at it for an unbiased figure"
)


@dataclass(frozen=True)
class Calibration:
    """The result of :func:`calibrate`.

    ``threshold`` maximises F1 and ``precision`` / ``recall`` / ``f1`` / ``kappa`` are measured at it;
    ``interval`` is its bootstrap 95% interval ``(low, high)`` (None when ``bootstrap=0``);
    ``youden_threshold`` maximises Youden's J, with its own figures in ``youden``. ``positive_from``:
    labels at or above it count as positive (``positive_rule`` says how it was chosen); ``n`` pairs,
    ``positives`` of them positive. ``model`` and ``precision_mode`` record which model and precision
    gave the scores, when the caller said so.
    """

    best: ThresholdStats
    youden: ThresholdStats
    interval: tuple[float, float] | None
    positive_from: float
    positive_rule: str
    n: int
    positives: int
    bootstrap: int
    seed: int
    model: str | None = None
    precision_mode: str | None = None

    @property
    def threshold(self) -> float:
        return self.best.threshold

    @property
    def precision(self) -> float:
        return self.best.precision

    @property
    def recall(self) -> float:
        return self.best.recall

    @property
    def f1(self) -> float:
        return self.best.f1

    @property
    def kappa(self) -> float:
        return self.best.kappa

    @property
    def youden_threshold(self) -> float:
        return self.youden.threshold

    @property
    def recommended(self) -> bool:
        """Whether the scores separate the labels better than chance: Cohen's kappa at the F1-best threshold
        and the best Youden's J both above 0. When not (e.g. the F1-best threshold calls every row positive),
        no threshold of these scores is worth using, and ``simkernel calibrate`` says so instead of
        recommending one."""
        return self.kappa > 0 and self.youden.youden_j > 0

    @property
    def warning(self) -> str | None:
        """Why no threshold is recommended (None when one is)."""
        if self.recommended:
            return None
        return (
            f"kappa {self.kappa:.4f} at the F1-best threshold and Youden's J {self.youden.youden_j:.4f} at "
            "best: these scores separate the labels no better than chance; do not use a threshold from them"
        )

    def to_dict(self) -> dict:
        """The JSON form (what ``simkernel calibrate --output-json`` writes)."""
        return {
            "threshold": self.threshold,
            "interval": list(self.interval) if self.interval is not None else None,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "kappa": self.kappa,
            "youden_threshold": self.youden_threshold,
            "recommended": self.recommended,
            "positive_from": self.positive_from,
            "n": self.n,
            "model": self.model,
            "precision_mode": self.precision_mode,
        }


def calibrate(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[float] | np.ndarray,
    positive_from: float | None = None,
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    model: str | None = None,
    precision_mode: str | None = None,
) -> Calibration:
    """The F1-maximising threshold of ``scores`` for the binary labels ``label >= positive_from``.

    Args:
        scores: one similarity score per pair (any real numbers, e.g. cosines in [-1, 1]).
        labels: one human label per pair, numeric (e.g. 0 different, 1 partly, 2 same meaning); leave
            unlabelled pairs out.
        positive_from: labels at or above it are positives; None: the midpoint of the lowest and the
            highest label.
        bootstrap: resamples for the 95% interval of the threshold (0: no interval; else at least
            1,000, :data:`~simkernel.stats.defaults.MIN_RESAMPLES`).
        seed: seed of the resampling, so the interval is reproducible.
        model, precision_mode: recorded in the result (which model and precision gave the scores).

    Raises ValueError naming the problem: lengths differ, a score or label is not a finite number, fewer
    than two pairs, every score the same (no threshold splits them), or the labels hold only one class
    under ``positive_from``. Scores that vary but separate the labels no better than chance give a
    result whose ``recommended`` is False.
    """
    values = _numbers(scores, "scores", "score")
    marks = _numbers(labels, "labels", "label", hint="; leave unlabelled pairs out before calibrating")
    if values.size != marks.size:
        raise ValueError(
            f"scores and labels must have one entry per pair; got {values.size} scores and {marks.size} labels"
        )
    if values.size < 2:
        raise ValueError(f"calibration needs at least 2 labelled pairs, got {values.size}")
    cut, rule = _positive_from(marks, positive_from)
    positive = marks >= cut
    positives = int(positive.sum())
    if positives in (0, values.size):
        which = "positive" if positives else "negative"
        raise ValueError(
            f"every one of the {values.size} labels is {which} under label >= {cut:g} ({rule}); calibration needs both classes: give labelled pairs of both kinds, or change positive_from (--positive-from on the command line)"
        )
    if values.min() == values.max():
        raise ValueError(
            f"every one of the {values.size} scores is {values[0]:g}: no threshold can split them, so none can reproduce the labels; check that the scores vary (the score column, the metric, the model)"
        )
    problem = resamples_problem(bootstrap)
    if problem:
        raise ValueError(f"bootstrap {problem}")
    table = sweep(values, positive)
    best, youden = _best_two(table)
    return Calibration(
        best=best,
        youden=youden,
        interval=_interval(values, positive, bootstrap, seed),
        positive_from=cut,
        positive_rule=rule,
        n=int(values.size),
        positives=positives,
        bootstrap=bootstrap,
        seed=seed,
        model=model,
        precision_mode=precision_mode,
    )


def _best_two(table) -> tuple[ThresholdStats, ThresholdStats]:
    figures = rates(table.tp, table.fp, table.positives, table.negatives)
    # np.argmax takes the first maximum: on a tie, the highest threshold
    return stats_at(table, int(np.argmax(figures["f1"]))), stats_at(
        table, int(np.argmax(figures["youden_j"]))
    )


def f1_threshold(values: np.ndarray, positive: np.ndarray) -> float:
    """The F1-maximising threshold alone (as :func:`calibrate` reports it)."""
    return _best_two(sweep(values, positive))[0].threshold


def _interval(values: np.ndarray, positive: np.ndarray, bootstrap: int, seed: int):
    if bootstrap == 0:
        return None
    rng = np.random.default_rng(seed)
    n = values.size
    found = []
    for _ in range(bootstrap):
        rows = rng.integers(0, n, n)
        drawn = positive[rows]
        hits = int(drawn.sum())
        if hits in (0, n):
            continue
        found.append(f1_threshold(values[rows], drawn))
    if not found:
        return None
    low, high = np.percentile(np.asarray(found), INTERVAL_PERCENTILES)
    return float(low), float(high)


def _positive_from(marks: np.ndarray, positive_from) -> tuple[float, str]:
    if positive_from is None:
        low, high = float(marks.min()), float(marks.max())
        cut = (low + high) / 2.0
        return cut, f"the midpoint of the labels {low:g}..{high:g}"
    if isinstance(positive_from, bool) or not isinstance(positive_from, numbers.Real):
        raise ValueError(f"positive_from must be a number (labels >= it are positive), got {positive_from!r}")
    if not math.isfinite(positive_from):
        raise ValueError(f"positive_from must be a finite number, got {positive_from!r}")
    return float(positive_from), "given"


def _numbers(values, name: str, item: str, hint: str = "") -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be a sequence of numbers, got a single {type(values).__name__}")
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers, got {type(values).__name__}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(
            f"{name}[{bad[0]}] is {float(array[bad[0]])!r}, not a finite number ({bad.size} such {item}{'s' if bad.size > 1 else ''}){hint}"
        )
    return array
