"""``--report FILE.html``: one self-contained HTML page of a run (``score``, ``calibrate``, ``compare``).

The page (:mod:`~simkernel.batch.report_page`) needs nothing but itself: no script, no stylesheet or font from the network; each chart (:mod:`~simkernel.batch.charts`) is an
SVG written by matplotlib (the plot extra, imported only here) and placed inline, with its text kept as
text (``svg.fonttype = "none"``) so that the browser draws it in the page's font stack, which covers
Latin, Cyrillic and CJK (``Noto Sans CJK SC``, then ``DejaVu Sans`` and the system's sans-serif). The
figures table carries each figure's exact value in ``data-value`` beside the rounded one it shows, and
the summary's JSON object is embedded (``<script type="application/json" id="summary-json">``, data
only, never run), so a test or a reader's tool can check the page against ``--summary-json``.

Sections: the figures and their 95% intervals; the score distribution (one histogram per label value
where there are labels); scores against labels; the threshold sweep (precision, recall and F1 against the
threshold, labels made binary as ``calibrate`` makes them, the F1-best threshold and any ``--threshold``
marked); the rows the metric gets most wrong against the labels (positives scored lowest, negatives
scored highest). ``compare`` adds the distribution of the paired differences (the mean and its interval
marked), the two runs' scores against each other, and the rows where they differ most.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from simkernel.batch.charts import (
    best_threshold,
    draw_differences,
    draw_distribution,
    draw_pairs,
    draw_scores_vs_labels,
    draw_sweep,
    draw_two,
    most_wrong,
    positive_split,
    sweep_curves,
)
from simkernel.batch.report_page import Figure, Page, require_plotting

__all__ = ["require_plotting", "write_calibrate_report", "write_compare_report", "write_score_report"]


def add_label_sections(
    page: Page,
    scores: np.ndarray,
    labels: np.ndarray | None,
    score_name: str,
    label_name: str | None,
    row_text: Callable[[int], list[str]],
    text_header: Sequence[str],
    threshold: float | None,
    calibrated: float | None = None,
    positive_from: float | None = None,
    row_name: Callable[[int], Any] = lambda i: f"row {i + 1}",
) -> None:
    """The distribution, scores against labels, the sweep and the most-wrong rows of one score column."""
    page.chart("Score distribution", draw_distribution(scores, labels, score_name, label_name))
    if labels is None or label_name is None or not (~np.isnan(labels)).any():
        return
    keep = ~np.isnan(labels)
    page.chart("Scores against labels", draw_scores_vs_labels(scores, labels, score_name, label_name))
    positive, cut = positive_split(labels[keep], positive_from)
    if calibrated is None:
        calibrated = best_threshold(scores, labels)
    if positive.all() or not positive.any() or calibrated is None:
        return
    marks = [("F1-best", calibrated)]
    if threshold is not None:
        marks.append(("--threshold", threshold))
    page.chart(
        "Threshold sweep",
        draw_sweep([("", sweep_curves(scores[keep], positive))], marks, score_name),
        note=f"positive: {label_name} >= {cut:g}"
        + (" (the midpoint of the labels, as calibrate makes them)" if positive_from is None else "")
        + "; the F1-best threshold is calibrate's",
    )
    used = threshold if threshold is not None else calibrated
    missed, false = most_wrong(scores, labels, used, positive_from=positive_from)
    header = ["row", "kind", score_name, label_name, *text_header]
    rows = [
        [row_name(i), "positive scored low", float(scores[i]), float(labels[i]), *row_text(i)] for i in missed
    ] + [
        [row_name(i), "negative scored high", float(scores[i]), float(labels[i]), *row_text(i)] for i in false
    ]
    page.table(
        "Rows the metric gets most wrong",
        header,
        rows,
        note=f"against the threshold {used:.4f}: positives ({label_name} >= {cut:g}) scored lowest below it, "
        f"negatives scored highest at or above it",
    )


# ------------------------------------------------------------------------------------------ score report
def summary_figures(summary: dict[str, Any], label_column: str | None) -> list[Figure]:
    intervals = summary.get("intervals") or {}
    rows = [Figure("rows", "rows", summary["rows"])]
    rows.append(
        Figure(
            "mean score",
            "mean_score",
            summary.get("mean_score"),
            intervals.get("mean_score"),
            "intervals.mean_score",
        )
    )
    if summary.get("passed") is not None:
        rows.append(
            Figure(
                f"pass rate (score >= {summary['threshold']:g})",
                "pass_rate",
                summary.get("pass_rate"),
                intervals.get("pass_rate"),
                "intervals.pass_rate",
                percent=True,
            )
        )
    if label_column is not None and summary.get("labelled_rows"):
        rows.append(Figure(f"rows labelled in {label_column}", "labelled_rows", summary["labelled_rows"]))
        rows.append(
            Figure(
                f"Pearson vs {label_column}",
                "pearson",
                summary.get("pearson"),
                intervals.get("pearson"),
                "intervals.pearson",
            )
        )
        rows.append(
            Figure(
                f"Spearman vs {label_column}",
                "spearman",
                summary.get("spearman"),
                intervals.get("spearman"),
                "intervals.spearman",
            )
        )
    return rows


def read_rows(path: str, fmt: str | None, indices: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The rows at ``indices`` (0-based data rows) of a file, read again; {} for stdin."""
    from simkernel.tables.readers import open_table

    wanted = set(indices)
    if not wanted or path == "-" or not os.path.isfile(path):  # stdin, or a folder or glob of files
        return {}
    found: dict[int, dict[str, Any]] = {}
    index = 0
    with open_table(path, fmt) as reader:
        for chunk in reader.chunks(65536):
            for row in chunk.rows:
                if index in wanted:
                    found[index] = row
                index += 1
            if len(found) == len(wanted):
                break
    return found


def _cell(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def write_score_report(
    job: Any, summary: Any, flat_scores: Sequence[float], labels: Sequence[float] | None
) -> None:
    """The report of one ``simkernel score`` run (``job`` a ScoreJob, ``summary`` its Summary)."""
    from simkernel.batch.rows import columns_of

    width = len(job.metric.output_columns(job.score_column))
    scores = np.asarray(flat_scores, dtype=np.float64).reshape(-1, width)[:, job.metric.primary_index]
    y = np.asarray(labels, dtype=np.float64) if labels is not None else None
    data = summary.as_dict()
    score_name = summary.primary_column or job.score_column
    page = Page(
        f"simkernel score: {os.path.basename(job.file) if job.file != '-' else 'stdin'}",
        f"{summary.rows:,} rows, {summary.description}",
        data,
    )
    from simkernel.batch.summary import interval_note

    page.figures(
        "Figures", summary_figures(data, job.label), note=interval_note(summary.resamples, summary.seed)
    )
    roles = columns_of(job)
    names = list(roles.values())
    candidates: list[int] = []
    if y is not None and (~np.isnan(y)).any():
        threshold = summary.threshold if summary.threshold is not None else best_threshold(scores, y)
        if threshold is not None:
            missed, false = most_wrong(scores, y, threshold)
            candidates = missed + false
    texts = read_rows(job.file, job.input_format, candidates)

    def row_text(i: int) -> list[str]:
        row = texts.get(i)
        return [_cell(row.get(name, "")) if row is not None else "" for name in names]

    add_label_sections(page, scores, y, score_name, job.label, row_text, names, summary.threshold)
    page.write(job.report)


# ---------------------------------------------------------------------------------------- compare report
def write_compare_report(comparison: Any, path: str, label: str | None, options: dict[str, Any]) -> None:
    """The report of one ``simkernel compare`` run (``comparison`` a :class:`~simkernel.batch.compare.Comparison`)."""
    r = comparison.result
    a, b = comparison.a, comparison.b
    data = comparison.as_dict()
    page = Page(
        "simkernel compare: is B better than A?",
        f"A = {a.name}, B = {b.name}; {r.n:,} rows"
        + (f", joined on {comparison.key}" if comparison.key else f", paired {comparison.pairing()}"),
        data,
    )
    rows = [
        Figure("rows", "n", r.n),
        Figure("mean A", "mean_a", r.mean_a, data["mean_a_interval"], "mean_a_interval"),
        Figure("mean B", "mean_b", r.mean_b, data["mean_b_interval"], "mean_b_interval"),
        Figure(
            "mean B - A",
            "mean_difference",
            r.mean_difference,
            data["difference_interval"],
            "difference_interval",
        ),
        Figure("p-value", "p_value", r.p_value),
        Figure("B better", "b_wins", r.b_wins),
        Figure("ties", "ties", r.ties),
        Figure("A better", "a_wins", r.a_wins),
    ]
    from simkernel.batch.summary import PAIRED_DIFFERENCE

    for side, figures in (comparison.correlations or {}).items():
        found = figures.get("intervals") or {}
        for stat in ("pearson", "spearman"):
            rows.append(
                Figure(
                    # the paired difference's key is "B - A": its row reads "Pearson vs label, B - A"
                    f"{stat.capitalize()} vs {label}, {side}"
                    if side == PAIRED_DIFFERENCE
                    else f"{stat.capitalize()} of {side} vs {label}",
                    f"correlations.{side}.{stat}",
                    figures.get(stat),
                    found.get(stat),
                    f"correlations.{side}.intervals.{stat}",
                )
            )
    kind = "exact (every sign pattern)" if r.exact else f"{r.permutations:,} random sign patterns"
    page.figures(
        "Figures",
        rows,
        note=f"{r.test}, {kind}; ties: |B - A| <= {r.tolerance:g}; the interval: BCa bootstrap over rows "
        f"({comparison.resamples:,} resamples, seed {comparison.seed})",
    )
    page.chart("Paired differences", draw_differences(r.differences, data["difference_interval"], "A", "B"))
    page.chart("B against A, row by row", draw_pairs(a.scores, b.scores, "A", "B"), size=(5.0, 4.2))
    score_name = "score"
    page.chart(
        "Score distributions",
        draw_two(a.scores, b.scores),
    )
    columns = text_columns(options, options.get("mode", "sas")) if options is not None else []

    def texts(side: Any, i: int) -> list[str]:
        return [_cell(side.rows[i].get(name, "")) for name in side.columns or columns if name in side.rows[i]]

    for title, chosen in (
        ("Rows where B is ahead most", r.b_better_rows),
        ("Rows where A is ahead most", r.a_better_rows),
    ):
        table_rows = [
            [
                comparison.row_name(i),
                float(a.scores[i]),
                float(b.scores[i]),
                float(r.differences[i]),
                " | ".join(texts(a, i)),
                " | ".join(texts(b, i)),
            ]
            for i in chosen
        ]
        page.table(title, ["row", "A", "B", "B - A", "A's texts", "B's texts"], table_rows)
    if label is not None:
        curves, marks = [], []
        for name, side in (("A", a), ("B", b)):
            if side.labels is None or not (~np.isnan(side.labels)).any():
                continue
            keep = ~np.isnan(side.labels)
            positive, _ = positive_split(side.labels[keep])
            if positive.all() or not positive.any():
                continue
            curves.append((name, sweep_curves(side.scores[keep], positive)))
            best = best_threshold(side.scores, side.labels)
            if best is not None:
                marks.append((f"{name} F1-best", best))
        if curves:
            page.chart(
                "Threshold sweep",
                draw_sweep(curves, marks, score_name),
                note=f"positive: {label} >= the midpoint of its labels, as calibrate makes them",
            )
        if b.labels is not None and (~np.isnan(b.labels)).any():
            page.chart("B's scores against labels", draw_scores_vs_labels(b.scores, b.labels, "B", label))
    page.write(path)


# -------------------------------------------------------------------------------------- calibrate report
def write_calibrate_report(report: Any, path: str, texts: dict[str, Any]) -> None:
    """The report of one ``simkernel calibrate`` run (``report`` a CalibrationReport; ``texts``: the
    labelled rows, their lines, the text columns and the label column's name)."""
    from simkernel.calibration.fit import IN_SAMPLE_NOTE

    result = report.calibration
    data = report.as_dict()
    figures = data["figures"] or {}
    found = figures.get("intervals") or {}
    label = texts["label"]
    page = Page(
        f"simkernel calibrate: {os.path.basename(report.source)}",
        f"{result.n:,} labelled rows, {report.description}; positive: {label} >= {result.positive_from:g}",
        data,
    )
    interval = (
        {
            "low": result.interval[0],
            "high": result.interval[1],
            "method": f"percentile bootstrap ({result.bootstrap:,} resamples)",
        }
        if result.interval is not None
        else None
    )
    rows = [
        Figure("labelled rows", "n", result.n),
        Figure("F1-best threshold", "threshold", result.threshold, interval, "figures.intervals.threshold"),
        Figure("F1 at it (in-sample)", "f1", result.f1),
        Figure(
            "precision at it (in-sample)",
            "figures.precision",
            figures.get("precision"),
            found.get("precision"),
            "figures.intervals.precision",
        ),
        Figure(
            "recall at it (in-sample)",
            "figures.recall",
            figures.get("recall"),
            found.get("recall"),
            "figures.intervals.recall",
        ),
        Figure("Cohen's kappa at it", "kappa", result.kappa),
        Figure("Youden's J threshold", "youden_threshold", result.youden_threshold),
        Figure(
            "mean score",
            "figures.mean_score",
            figures.get("mean_score"),
            found.get("mean_score"),
            "figures.intervals.mean_score",
        ),
        Figure(
            f"Pearson vs {label}",
            "figures.pearson",
            figures.get("pearson"),
            found.get("pearson"),
            "figures.intervals.pearson",
        ),
        Figure(
            f"Spearman vs {label}",
            "figures.spearman",
            figures.get("spearman"),
            found.get("spearman"),
            "figures.intervals.spearman",
        ),
    ]
    resamples = figures.get("resamples", 0)
    warning = "" if result.recommended else f"No threshold recommended: {result.warning}. "
    page.figures(
        "Figures",
        rows,
        note=f"{warning}95% intervals: the mean and the correlations BCa bootstrap over rows ({resamples:,} resamples, "
        f"seed {figures.get('seed', 0)}); precision and recall Wilson score at the threshold ({IN_SAMPLE_NOTE}); the threshold's: calibrate's percentile bootstrap",
    )
    scores = np.asarray(report.scores, dtype=np.float64)
    labels = np.asarray(report.labels, dtype=np.float64)
    columns = texts["columns"]

    def row_text(i: int) -> list[str]:
        return [_cell(texts["rows"][i].get(name, "")) for name in columns]

    add_label_sections(
        page,
        scores,
        labels,
        "score",
        label,
        row_text,
        columns,
        None,
        calibrated=result.threshold,
        positive_from=result.positive_from,
        row_name=lambda i: f"line {texts['lines'][i]}",
    )
    page.write(path)


def text_columns(options: dict[str, Any], metric: str) -> list[str]:
    """The text columns a report's tables show: the predicted texts and the metric's target."""
    from simkernel.batch.rows import DEFAULT_COLUMNS
    from simkernel.scoring.registry import get_metric

    target = get_metric(metric).target
    return [
        options.get("predicted") or DEFAULT_COLUMNS["predicted"],
        options.get(target) or DEFAULT_COLUMNS[target],
    ]
