"""The summary ``simkernel score`` prints on stderr (and writes as JSON with ``--summary-json``).

For a metric that adds several score columns, the figures below are its primary column's, and
``columns`` adds each column's mean and correlations (absent from the JSON of a one-column metric).

rows, mean score, pass rate (where a threshold applies), Pearson and Spearman correlation with the
human labels (rows without a label are scored but left out of the correlation, and the summary says
how many), time taken (in all, loading the model, scoring) and rows scored per second (scoring time only).

Every figure has its 95% interval (``intervals``, :mod:`simkernel.stats.intervals`), each column's too:
the mean and the correlations a seeded BCa bootstrap over rows (``resamples``, default 10,000, and
``seed``; 0 resamples: none), the pass rate Wilson's score interval, and so is the mean of scores that are
all 0 or 1 (a proportion: :func:`~simkernel.stats.intervals.mean_interval`). The correlations' resamples are
those of the labelled rows. Where a figure has no interval, ``no_interval`` says why (figure -> reason),
and the printed line says ``n/a`` with the reason.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

import numpy as np

from simkernel.stats.correlation import pearson, spearman
from simkernel.stats.intervals import (
    BOOTSTRAP_METHOD,
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    NO_BOOTSTRAP,
    WILSON_METHOD,
    Intervals,
    bootstrap_intervals,
    is_proportion,
    mean_interval,
    wilson,
)

PAIRED_DIFFERENCE = "B - A"  # compare's key (and label) of the paired differences, B's figure minus A's


@dataclass
class ColumnSummary:
    """One score column of a metric that adds several: its name, mean and correlations with the labels."""

    name: str
    mean: float | None
    pearson: float | None
    spearman: float | None
    intervals: dict[str, dict[str, Any] | None] | None = None
    no_interval: dict[str, str] = field(default_factory=dict)


@dataclass
class Summary:
    rows: int
    description: str
    mean_score: float | None
    threshold: float | None
    passed: int | None
    label_column: str | None
    labelled_rows: int | None
    pearson: float | None
    spearman: float | None
    elapsed_s: float
    load_s: float
    score_s: float
    rows_per_s: float | None
    output: str
    notes: list[str] = field(default_factory=list)
    primary_column: str | None = None
    columns: list[ColumnSummary] | None = None
    pass_rate: float | None = None
    # figure -> Interval.as_dict() (estimate, low, high, level, method...) or None where none exists
    intervals: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    # figure -> why it has no interval (only the figures of ``intervals`` that are None)
    no_interval: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: NaN (an undefined correlation) becomes null; ``primary_column`` and ``columns``
        only for a metric that adds several score columns."""
        data = json_plain(asdict(self))
        if self.columns is None:
            del data["primary_column"], data["columns"]
        return data

    def lines(self) -> list[str]:
        out = [f"simkernel score: {self.rows} row{'s' if self.rows != 1 else ''}, {self.description}"]
        if self.rows == 0:
            out.append("  nothing to score: the input has a header but no rows")
        if self.mean_score is not None:
            primary = f" ({self.primary_column})" if self.columns is not None else ""
            mean_ci = _ci(self.intervals.get("mean_score"), self.no_interval.get("mean_score"))
            out.append(f"  mean score  {self.mean_score:.4f}{primary}{mean_ci}")
        if self.threshold is not None and self.passed is not None:
            rate = self.passed / self.rows if self.rows else 0.0
            out.append(
                f"  pass rate   {rate:.1%} ({self.passed} of {self.rows} with score >= {self.threshold:g})"
                f"{_ci(self.intervals.get('pass_rate'), self.no_interval.get('pass_rate'), percent=True)}"
            )
        if self.label_column is not None:
            if self.labelled_rows:
                out.append(
                    f"  vs {self.label_column!r}  Pearson {correlation_text(self.pearson)}, "
                    f"Spearman {correlation_text(self.spearman)} "
                    f"({self.labelled_rows} of {self.rows} rows labelled)"
                )
                both = [
                    _ci(self.intervals.get(name), self.no_interval.get(name), bare=True)
                    for name in ("pearson", "spearman")
                ]
                if any(both):
                    out.append(
                        f"  {'':{len(repr(self.label_column)) + 3}}  Pearson{both[0]}, Spearman{both[1]}"
                    )
            else:
                out.append(f"  vs {self.label_column!r}  no row has a label; no correlation")
        for column in self.columns or ():
            if column.mean is None:
                continue
            found, why = column.intervals or {}, column.no_interval
            figures = f"mean {column.mean:.4f}{brackets(found.get('mean_score'), why.get('mean_score'))}"
            if self.label_column is not None and self.labelled_rows:
                figures += (
                    f", vs {self.label_column!r} Pearson {correlation_text(column.pearson)}"
                    f"{brackets(found.get('pearson'), why.get('pearson'))}, Spearman {correlation_text(column.spearman)}"
                    f"{brackets(found.get('spearman'), why.get('spearman'))}"
                )
            out.append(f"  column      {column.name}: {figures}")
        speed = f", {self.rows_per_s:,.0f} rows/s" if self.rows_per_s else ""
        out.append(
            f"  time        {self.elapsed_s:.2f} s in all: model load {self.load_s:.2f} s, "
            f"scoring {self.score_s:.2f} s{speed}"
        )
        out.append(f"  output      {'stdout' if self.output == '-' else self.output}")
        if self.intervals:
            out.append(f"  intervals   {interval_note(self.resamples, self.seed)}")
        out.extend(f"  note        {note}" for note in self.notes)
        return out

    def print(self, stream: TextIO | None = None) -> None:
        stream = stream if stream is not None else sys.stderr
        stream.write("\n".join(self.lines()) + "\n")
        stream.flush()


def json_plain(value: Any) -> Any:
    """``value`` (dicts, lists, tuples, floats) with every NaN replaced by None, so that JSON holds null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_plain(v) for v in value]
    return value


def interval_note(resamples: int, seed: int) -> str:
    """What the summary's intervals are, for its last lines."""
    if resamples == 0:
        return f"{DEFAULT_LEVEL:.0%}: pass rate and 0/1 scores' mean {WILSON_METHOD}; no bootstrap (--resamples 0)"
    return (
        f"{DEFAULT_LEVEL:.0%}, {BOOTSTRAP_METHOD} over rows ({resamples:,} resamples, seed {seed}; "
        f"--resamples, --seed); pass rate {WILSON_METHOD}"
    )


def _ci(
    interval: dict[str, Any] | None, reason: str | None, percent: bool = False, bare: bool = False
) -> str:
    """`` (95% CI 0.7012 to 0.7398)``, ``, Wilson score`` added where the method is not the bootstrap;
    `` (95% CI n/a: REASON)`` where there is none (nothing with --resamples 0, which the last lines say)."""
    if not interval:
        if reason is None or reason == NO_BOOTSTRAP:
            return ""
        text = f"{DEFAULT_LEVEL:.0%} CI n/a: {reason}"
    else:
        digits = ".1%" if percent else ".4f"
        text = f"{interval['level']:.0%} CI {interval['low']:{digits}} to {interval['high']:{digits}}"
        if interval["method"] != BOOTSTRAP_METHOD and not percent:
            text += f", {interval['method']}: every score is 0 or 1"
    return f" {text}" if bare else f" ({text})"


def brackets(interval: dict[str, Any] | None, reason: str | None) -> str:
    """`` [0.7012, 0.7398]`` beside a figure; `` [n/a: REASON]`` where it has no interval (nothing with
    --resamples 0)."""
    if interval:
        return f" [{interval['low']:.4f}, {interval['high']:.4f}]"
    if reason is None or reason == NO_BOOTSTRAP:
        return ""
    return f" [n/a: {reason}]"


def correlation_text(value: float | None) -> str:
    """A correlation, or ``n/a (constant scores or labels)`` where it is undefined (None or NaN)."""
    if value is None or math.isnan(value):
        return "n/a (constant scores or labels)"
    return f"{value:.4f}"


def summarize(
    *,
    scores: Sequence[float],
    labels: Sequence[float | None] | None,
    label_column: str | None,
    threshold: float | None,
    description: str,
    elapsed_s: float,
    load_s: float,
    score_s: float,
    output: str,
    notes: Sequence[str] = (),
    scored_rows: int | None = None,
    columns: Sequence[str] = ("score",),
    primary: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Summary:
    """Build the :class:`Summary` of one run (statistics in float64).

    ``scores`` and ``labels`` cover every row; a label is None (or NaN in a float array) where the row has
    none. ``scored_rows`` is how many of the rows this run scored, for the rate (default: all; fewer
    when the run continued an interrupted one). With several ``columns`` (the score columns' names),
    ``scores`` holds each row's numbers in turn, and the figures are those of the column at ``primary``.
    ``resamples`` and ``seed``: the bootstrap's (0 resamples: the pass rate's Wilson interval only).
    """
    width = len(columns)
    table = np.asarray(scores, dtype=np.float64).reshape(-1, width)
    values = table[:, primary]
    rows = int(values.size)
    scored = rows if scored_rows is None else scored_rows
    passed = int(np.count_nonzero(values >= threshold)) if threshold is not None else None
    labelled = r = rho = None
    keep = y = None
    if labels is not None:
        y_all = np.asarray([np.nan if label is None else label for label in labels], dtype=np.float64)
        keep = ~np.isnan(y_all)
        labelled = int(np.count_nonzero(keep))
        if labelled:
            x, y = values[keep], y_all[keep]
            r, rho = pearson(x, y), spearman(x, y)
    intervals, no_interval = figure_intervals(values, keep if labelled else None, y, resamples, seed)
    if passed is not None:
        rate = wilson(passed, rows)
        intervals["pass_rate"] = rate.as_dict() if rate is not None else None
        if rate is None:
            no_interval["pass_rate"] = "no rows"
    column_summaries = None
    if width > 1:
        column_summaries = []
        for index, name in enumerate(columns):
            column = table[:, index]
            cr = crho = None
            if keep is not None and y is not None and labelled:
                cr, crho = pearson(column[keep], y), spearman(column[keep], y)
            mean = float(column.mean()) if rows else None
            found, why = figure_intervals(column, keep if labelled else None, y, resamples, seed)
            column_summaries.append(ColumnSummary(name, mean, cr, crho, found, why))
    return Summary(
        rows=rows,
        description=description,
        mean_score=float(values.mean()) if rows else None,
        threshold=threshold,
        passed=passed,
        label_column=label_column,
        labelled_rows=labelled,
        pearson=r,
        spearman=rho,
        elapsed_s=elapsed_s,
        load_s=load_s,
        score_s=score_s,
        rows_per_s=scored / score_s if scored and score_s > 0 else None,
        output=output,
        notes=list(notes),
        primary_column=columns[primary] if width > 1 else None,
        columns=column_summaries,
        pass_rate=passed / rows if passed is not None and rows else None,
        intervals=intervals,
        resamples=resamples,
        seed=seed,
        no_interval=no_interval,
    )


def figure_intervals(
    values: np.ndarray, keep: np.ndarray | None, y: np.ndarray | None, resamples: int, seed: int
) -> tuple[dict[str, dict[str, Any] | None], dict[str, str]]:
    """The intervals of the mean of ``values`` (:func:`~simkernel.stats.intervals.mean_interval`) and, with
    labels (``keep``: the labelled rows, ``y``: their labels), of Pearson's r and Spearman's rho:
    (figure name -> ``Interval.as_dict()`` or None, figure name -> why it has none). With every row
    labelled, a bootstrap mean comes from the correlations' run over the same rows (one draw of the
    resamples, one kernel pass; the same interval as alone: resamples depend on the rows, their number and
    the seed only)."""
    found = Intervals()
    if keep is not None and y is not None:
        joint = bool(keep.all()) and not is_proportion(values)
        wanted = ("mean", "pearson", "spearman") if joint else ("pearson", "spearman")
        found = bootstrap_intervals(values[keep], y, statistics=wanted, resamples=resamples, seed=seed)
    mean = found if "mean" in found else mean_interval(values, resamples=resamples, seed=seed)
    parts = [("mean_score", mean["mean"], mean.reasons.get("mean"))]
    parts += [
        (name, found[name], found.reasons.get(name)) for name in ("pearson", "spearman") if name in found
    ]
    intervals: dict[str, dict[str, Any] | None] = {}
    reasons: dict[str, str] = {}
    for name, interval, reason in parts:
        intervals[name] = interval.as_dict() if interval is not None else None
        if reason is not None:
            reasons[name] = reason
    return intervals, reasons
