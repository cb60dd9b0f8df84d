"""The charts of a ``--report`` (each a function that draws on a matplotlib Figure) and the label
helpers they share: labels made binary as ``calibrate`` makes them, the threshold sweep, the rows a
metric gets most wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simkernel.batch.report_page import COLORS

MOST_WRONG = 5  # rows listed each way
_LABEL_HISTOGRAMS = 8  # at most this many distinct labels get a histogram each; more: split at the midpoint


def positive_split(labels: np.ndarray, positive_from: float | None = None) -> tuple[np.ndarray, float]:
    """Binary labels as ``calibrate`` makes them: ``label >= positive_from`` (default: the midpoint of the
    lowest and highest label)."""
    cut = (float(labels.min()) + float(labels.max())) / 2.0 if positive_from is None else positive_from
    return labels >= cut, cut


def draw_distribution(scores: np.ndarray, labels: np.ndarray | None, score_name: str, label_name: str | None):
    def draw(figure) -> None:
        axes = figure.subplots()
        finite = scores[np.isfinite(scores)]
        bins = np.histogram_bin_edges(finite, bins=30) if finite.size else 10
        if labels is None or label_name is None:
            axes.hist(finite, bins=bins, color=COLORS[0])
        else:
            keep = ~np.isnan(labels)
            values = np.unique(labels[keep])
            if values.size <= _LABEL_HISTOGRAMS:
                groups = [(f"{label_name} = {v:g}", labels == v) for v in values]
            else:
                positive, cut = positive_split(labels[keep])
                mask = np.zeros(labels.size, dtype=bool)
                mask[np.flatnonzero(keep)] = positive
                groups = [(f"{label_name} < {cut:g}", keep & ~mask), (f"{label_name} >= {cut:g}", mask)]
            if (~keep).any():
                groups.append((f"{label_name}: none", ~keep))
            for index, (name, mask) in enumerate(groups):
                axes.hist(scores[mask], bins=bins, alpha=0.55, label=name, color=COLORS[index % len(COLORS)])
            _legend(axes)
        axes.set_xlabel(score_name)
        axes.set_ylabel("rows")

    return draw


def draw_scores_vs_labels(scores: np.ndarray, labels: np.ndarray, score_name: str, label_name: str):
    def draw(figure) -> None:
        axes = figure.subplots()
        keep = ~np.isnan(labels)
        y, x = labels[keep], scores[keep]
        jitter = np.random.default_rng(0).uniform(-0.08, 0.08, y.size) * (np.ptp(y) or 1.0)
        axes.scatter(x, y + jitter, s=8, alpha=0.5, color=COLORS[0])
        values = np.unique(y)
        if values.size <= _LABEL_HISTOGRAMS:  # the mean score of each label
            means = [float(x[y == v].mean()) for v in values]
            axes.plot(means, values, "D-", color=COLORS[1], label="mean score per label")
            _legend(axes)
        axes.set_xlabel(score_name)
        axes.set_ylabel(f"{label_name} (jittered)")

    return draw


def sweep_curves(scores: np.ndarray, positive: np.ndarray) -> dict[str, np.ndarray]:
    """Precision, recall and F1 of ``score >= t`` at every distinct score ``t`` (from the calibration
    layer's sweep)."""
    from simkernel.calibration.binary import rates, sweep

    table = sweep(scores.astype(np.float64), positive.astype(bool))
    figures = rates(table.tp, table.fp, table.positives, table.negatives)
    return {"threshold": table.candidates, **{k: figures[k] for k in ("precision", "recall", "f1")}}


def draw_sweep(
    curves: Sequence[tuple[str, dict[str, np.ndarray]]], marks: Sequence[tuple[str, float]], score_name: str
):
    def draw(figure) -> None:
        axes = figure.subplots()
        styles = {"precision": "--", "recall": ":", "f1": "-"}
        for index, (name, curve) in enumerate(curves):
            color = COLORS[index % len(COLORS)]
            for key, style in styles.items():
                prefix = f"{name} " if name else ""
                axes.plot(curve["threshold"], curve[key], style, color=color, label=f"{prefix}{key}")
        for index, (name, value) in enumerate(marks):
            axes.axvline(value, color=COLORS[(index + 2) % len(COLORS)], linewidth=1.2)
            axes.annotate(
                f"{name} {value:.4f}",
                (value, 0.02 + 0.08 * index),
                xycoords=("data", "axes fraction"),
                textcoords="offset points",
                xytext=(4, 0),
            )
        axes.set_xlabel(f"threshold on {score_name}")
        axes.set_ylabel("precision, recall, F1")
        axes.set_ylim(0, 1.02)
        _legend(axes, fontsize=8)

    return draw


def draw_differences(d: np.ndarray, interval: dict[str, Any] | None, a_name: str, b_name: str):
    def draw(figure) -> None:
        axes = figure.subplots()
        axes.hist(d, bins=40, color=COLORS[0])
        axes.axvline(0.0, color="#555", linewidth=1)
        mean = float(d.mean()) if d.size else 0.0
        axes.axvline(mean, color=COLORS[1], linewidth=1.5, label=f"mean {mean:+.4f}")
        if interval:
            axes.axvspan(
                interval["low"],
                interval["high"],
                color=COLORS[1],
                alpha=0.2,
                label="95% interval of the mean",
            )
        axes.set_xlabel(f"{b_name} - {a_name} (per row)")
        axes.set_ylabel("rows")
        _legend(axes)

    return draw


def draw_pairs(a: np.ndarray, b: np.ndarray, a_name: str, b_name: str):
    def draw(figure) -> None:
        axes = figure.subplots()
        axes.scatter(a, b, s=8, alpha=0.5, color=COLORS[0])
        low = float(min(a.min(), b.min())) if a.size else 0.0
        high = float(max(a.max(), b.max())) if a.size else 1.0
        axes.plot([low, high], [low, high], color="#555", linewidth=1)
        axes.set_xlabel(a_name)
        axes.set_ylabel(b_name)
        axes.set_aspect("equal", adjustable="datalim")

    return draw


def most_wrong(
    scores: np.ndarray,
    labels: np.ndarray,
    threshold: float,
    count: int = MOST_WRONG,
    positive_from: float | None = None,
):
    """(positives scored lowest below ``threshold``, negatives scored highest at or above it): row indices,
    worst first; labels made binary as :func:`positive_split` makes them."""
    keep = np.flatnonzero(~np.isnan(labels))
    positive, _ = positive_split(labels[keep], positive_from)
    rows_pos, rows_neg = keep[positive], keep[~positive]
    missed = rows_pos[scores[rows_pos] < threshold]
    missed = missed[np.argsort(scores[missed], kind="stable")][:count]
    false = rows_neg[scores[rows_neg] >= threshold]
    false = false[np.argsort(-scores[false], kind="stable")][:count]
    return [int(i) for i in missed], [int(i) for i in false]


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """The F1-best threshold of ``calibrate`` (no bootstrap), or None with one class only."""
    from simkernel.calibration import calibrate

    keep = ~np.isnan(labels)
    try:
        return calibrate(scores[keep], labels[keep], bootstrap=0).threshold
    except ValueError:
        return None


def draw_two(a: np.ndarray, b: np.ndarray):
    def draw(figure) -> None:
        axes = figure.subplots()
        both = np.concatenate([a, b])
        bins = np.histogram_bin_edges(both, bins=30) if both.size else 10
        axes.hist(a, bins=bins, alpha=0.55, label="A", color=COLORS[0])
        axes.hist(b, bins=bins, alpha=0.55, label="B", color=COLORS[1])
        axes.set_xlabel("score")
        axes.set_ylabel("rows")
        _legend(axes)

    return draw


def _legend(axes, **options: Any) -> None:
    """A legend where something is labelled (an empty input draws nothing to name)."""
    if axes.get_legend_handles_labels()[0]:
        axes.legend(**options)
