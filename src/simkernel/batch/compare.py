"""``simkernel.compare_files``: what ``simkernel compare`` runs, from Python. Is system B better than A?

Three inputs, all read whole and checked before anything is scored or written:

- two scored files (``a``, ``b``): the column ``score_column`` of each, the rows joined on ``key`` (or
  paired in order without it);
- two files of texts (``score=True``): each scored first with ``metric`` (the scoring core's engine,
  one model load for both), then as above;
- one file with two predicted columns (``predicted`` for A, ``predicted_b`` for B), each scored with
  ``metric`` against the same ground truth or references.

A key missing from one side, a key twice in a file, a key cell that is empty, different row counts without
a key, a missing score column or a score that is not a finite number stops the run with one
:class:`~simkernel.errors.DataError` naming the rows or columns; nothing is written. Without a key the
rows pair in order, and the text columns that say which question a row is (:func:`question_columns`: the
question, ground truth and references columns, as named by the options or by default, that both files
have; never the predicted answers, which differ between systems) must then be equal row by row: the first
row where they differ stops the run, naming both lines and suggesting ``--key``. The comparison is
:func:`simkernel.stats.paired_comparison` (the mean paired difference with its BCa interval, the paired
sign-flip permutation test, wins / ties / losses at ``tolerance``, the rows that differ most).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from simkernel.batch.engines import score_in_chunks
from simkernel.batch.job import ScoreJob
from simkernel.batch.rows import DEFAULT_COLUMNS, RowProblems, columns_of, parse_label, read_inputs
from simkernel.batch.score import check_mode_options, write_output_json
from simkernel.batch.summary import PAIRED_DIFFERENCE, brackets, correlation_text, json_plain
from simkernel.errors import DataError, UsageError
from simkernel.stats.defaults import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, resamples_problem
from simkernel.tables.formats import Table, table_format
from simkernel.tables.table_format import check_output_paths
from simkernel.tables.whole import read_table

__all__ = ["QUESTION_COLUMN", "Comparison", "Side", "compare_files", "question_columns"]

_LISTED = 10  # keys or lines named in an error
QUESTION_COLUMN = "question"  # the column of the questions, when a file has one (no option names it)
# options that only name columns or the format: they apply to scored files too (the report shows the texts)
_DISPLAY = {"predicted", "ground_truth", "references", "input_format"}


@dataclass
class Side:
    """One system's run: its ``name`` (the file, or the file and column), its scores (float64, in the
    order of side A's rows), labels (NaN where none; None without ``label``), its rows (to show texts)."""

    name: str
    scores: np.ndarray
    labels: np.ndarray | None
    rows: list[dict[str, Any]]
    lines: list[int]
    columns: list[str] | None = None  # the text columns a report shows (None: the metric's defaults)


@dataclass
class Comparison:
    """The result of :func:`compare_files`: ``result`` (a :class:`~simkernel.stats.PairedComparison`),
    the two :class:`Side`, the ``key`` column (None: rows paired in order), ``description`` (the metric
    when texts were scored), ``correlations`` (per side, with labels: the summary's intervals) and
    ``elapsed_s``. ``as_dict()`` is ``--output-json``'s object; ``lines()`` what the command prints."""

    result: Any
    a: Side
    b: Side
    key: str | None
    description: str | None
    correlations: dict[str, dict[str, Any]] | None
    elapsed_s: float
    resamples: int
    seed: int
    checked: list[str] | None = None  # two files without a key: the columns found equal row by row

    def pairing(self) -> str:
        """How the rows were paired: joined on the key, or in order (and which columns were checked)."""
        if self.key is not None:
            return f"joined on {self.key!r}"
        if self.checked is None:
            return "row by row: two answer columns of one file"
        return pairing_text(self.checked)

    def row_name(self, index: int) -> str:
        if self.key is not None:
            return f"{self.key}={_key_text(self.a.rows[index].get(self.key))}"
        return f"row {index + 1}"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "a": self.a.name,
            "b": self.b.name,
            "key": self.key,
            "checked_columns": self.checked,
            "description": self.description,
        }
        data.update(self.result.as_dict())
        for field_name in ("b_better_rows", "a_better_rows"):
            data[field_name] = [
                {
                    "row": i + 1,
                    "name": self.row_name(i),
                    "a": float(self.a.scores[i]),
                    "b": float(self.b.scores[i]),
                }
                for i in data[field_name]
            ]
        data["correlations"] = self.correlations
        data["resamples"] = self.resamples
        data["seed"] = self.seed
        return json_plain(data)

    def lines(self) -> list[str]:
        r = self.result
        out = [f"simkernel compare: {r.n:,} rows, A = {self.a.name}, B = {self.b.name}"]
        if self.key is None and self.checked is not None:
            out.append(f"  paired      {self.pairing()}")
        if self.description:
            out.append(f"  scored by   {self.description}")
        means = [
            f"{side} {value:.4f}{brackets(found.as_dict() if found else None, r.no_interval.get(name))}"
            for side, name, value, found in (
                ("A", "mean_a", r.mean_a, r.mean_a_interval),
                ("B", "mean_b", r.mean_b, r.mean_b_interval),
            )
        ]
        out.append(f"  mean        {', '.join(means)}")
        interval = (
            f" ({r.difference.text()}, {r.difference.method}, {self.resamples:,} resamples, seed {self.seed})"
            if r.difference is not None
            else f" ({DEFAULT_LEVEL:.0%} CI n/a: {r.no_interval['difference']})"
        )
        out.append(f"  B - A       {r.mean_difference:+.4f}{interval}")
        kind = "exact, all sign patterns" if r.exact else f"{r.permutations:,} random sign patterns"
        out.append(f"  p-value     {r.p_value:.4g} ({r.test}; {kind})")
        out.append(
            f"  per row     B better {r.b_wins:,}, ties {r.ties:,}, A better {r.a_wins:,} (tolerance {r.tolerance:g})"
        )
        for side_name, figures in (self.correlations or {}).items():
            parts = []
            for stat in ("pearson", "spearman"):
                value = figures.get(stat)
                found = (figures.get("intervals") or {}).get(stat)
                why = (figures.get("no_interval") or {}).get(stat)
                if figures["labelled_rows"] < 2:
                    parts.append(f"{stat.capitalize()} n/a ({figures['labelled_rows']} labelled rows)")
                    continue
                ci = brackets(found, why) if value is not None and not math.isnan(value) else ""
                shown = correlation_text(value)
                if side_name == PAIRED_DIFFERENCE and value is not None and not math.isnan(value):
                    shown = f"{value:+.4f}"
                parts.append(f"{stat.capitalize()} {shown}{ci}")
            where = (
                f" (paired: the same resamples of the {figures['labelled_rows']:,} rows labelled in both)"
                if side_name == PAIRED_DIFFERENCE
                else ""
            )
            out.append(f"  vs labels   {side_name}: {', '.join(parts)}{where}")
        for title, rows in (("B ahead", r.b_better_rows), ("A ahead", r.a_better_rows)):
            if rows:
                shown = ", ".join(f"{self.row_name(i)} ({float(r.differences[i]):+.4f})" for i in rows)
                out.append(f"  {title:<11} {shown}")
        out.append(f"  time        {self.elapsed_s:.2f} s")
        return out


def compare_files(
    a: str | os.PathLike,
    b: str | os.PathLike | None = None,
    *,
    key: str | None = None,
    score_column: str = "score",
    score: bool = False,
    predicted_b: str | None = None,
    metric: str = "sas",
    label: str | None = None,
    tolerance: float = 0.0,
    top: int = 5,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    output_json: str | os.PathLike | None = None,
    report: str | os.PathLike | None = None,
    progress: bool = False,
    **options: Any,
) -> Comparison:
    """Compare two runs of the same questions, row by row (B - A > 0: B scores higher); the same run as
    ``simkernel compare A [B] ...``.

    :param a: run A's file (CSV, TSV, JSONL or Parquet); with ``predicted_b`` the one file of both runs.
    :param b: run B's file (None with ``predicted_b``).
    :param key: join the files' rows on this column (None: pair them in order, the question columns checked).
    :param score_column: the scores' column in each file (ignored when texts are scored).
    :param score: score both files' texts with ``metric`` first.
    :param predicted_b: one file: the column of B's answers (``predicted=``: A's, default ``predicted``).
    :param label: a column of human labels: each side's Pearson and Spearman with intervals, and the
        report's label charts.
    :param tolerance: ``|B - A| <= tolerance`` is a tie. :param top: rows listed each way.
    :param resamples: the bootstrap's (0: no interval); ``seed``: the bootstrap's and the test's.
    :param output_json: also write ``as_dict()`` here; :param report: also write an HTML report here.
    :param options: the columns and model settings, named as ``simkernel score``'s options
        (``predicted=``, ``ground_truth=``, ``references=``, ``model=``, ``precision=``, ``batch_size=``,
        ``threads=``, ``cache_dir=``, ``aggregation=``, ``metric_options=``, ``allow_empty=``,
        ``input_format=``).
    :raises UsageError: settings that do not apply; :raises DataError: bad input (nothing written).
    """
    from simkernel.stats.paired import paired_comparison

    started = time.perf_counter()
    if (b is None) == (predicted_b is None):
        raise UsageError(
            "compare takes two files (RUN_A RUN_B), or one file with --predicted-b COLUMN (B's answers beside --predicted, A's)"
        )
    if report is not None:
        from simkernel.batch.report import require_plotting

        require_plotting()
    problem = resamples_problem(resamples)
    if problem:
        raise UsageError(f"--resamples {problem}")
    if not math.isfinite(tolerance) or tolerance < 0:
        raise UsageError(f"--tolerance must be a number >= 0, got {tolerance!r}")
    sources = [os.fspath(path) for path in (a, b) if path is not None]
    check_output_paths({"--output-json": output_json, "--report": report}, sources)
    fmt = options.get("input_format")
    scoring = score or predicted_b is not None
    settings = sorted(
        name for name, value in options.items() if name not in _DISPLAY and value not in (None, False)
    )
    if settings and not scoring:
        raise UsageError(
            f"{', '.join(settings)} apply only when compare scores texts; add --score (or --predicted-b), or drop them"
        )
    job = ScoreJob(file=os.fspath(a), mode=metric, label=label, **options) if scoring else None
    if job is not None:
        check_mode_options(job)
    description = None
    checked: list[str] | None = None
    if predicted_b is not None:
        assert job is not None
        table = read_table(job.file, fmt)
        if key is not None:
            _check_key(table, key)
        job_b = ScoreJob(**{**job.as_options(), "predicted": predicted_b})
        inputs = [read_inputs(table, columns_of(j), j) for j in (job, job_b)]  # every row checked first
        scorer = job.metric.scorer(job.settings)
        scorer.load()
        description = scorer.description
        names = [f"{table.source}:{columns_of(j)['predicted']}" for j in (job, job_b)]
        sides = []
        for name, found in zip(names, inputs, strict=True):
            values = job.metric.primary_scores(score_in_chunks(scorer, found, enabled=progress))
            sides.append(
                Side(
                    name,
                    np.asarray(values, dtype=np.float64),
                    _labels(found.labels),
                    table.rows,
                    table.line_numbers,
                )
            )
        side_a, side_b = sides
    else:
        assert b is not None
        tables = [read_table(os.fspath(path), fmt) for path in (a, b)]
        if key is not None:
            for table in tables:
                _check_key(table, key)
            order = _join(tables[0], tables[1], key)
        else:
            if len(tables[0]) != len(tables[1]):
                raise DataError(
                    f"{tables[0].source} has {len(tables[0])} rows and {tables[1].source} has {len(tables[1])}; give --key COLUMN to join the rows on a column, or compare runs of the same rows"
                )
            order = list(range(len(tables[1])))
            checked = _check_same_questions(tables[0], tables[1], question_columns(options))
        if scoring:
            assert job is not None
            jobs = [ScoreJob(**{**job.as_options(), "file": table.source}) for table in tables]
            found_inputs = [
                read_inputs(table, columns_of(j), j) for table, j in zip(tables, jobs, strict=True)
            ]
            scorer = job.metric.scorer(job.settings)
            scorer.load()
            description = scorer.description
            values = [
                np.asarray(
                    job.metric.primary_scores(score_in_chunks(scorer, found, enabled=progress)),
                    dtype=np.float64,
                )
                for found in found_inputs
            ]
            labels = [_labels(found.labels) for found in found_inputs]
        else:
            values = [_score_column(table, score_column) for table in tables]
            labels = [_label_column(table, label) if label is not None else None for table in tables]
        side_a = Side(tables[0].source, values[0], labels[0], tables[0].rows, tables[0].line_numbers)
        side_b = Side(
            tables[1].source,
            values[1][order],
            labels[1][order] if labels[1] is not None else None,
            [tables[1].rows[i] for i in order],
            [tables[1].line_numbers[i] for i in order],
        )
    result = paired_comparison(
        side_a.scores, side_b.scores, tolerance=tolerance, resamples=resamples, seed=seed, top=top
    )
    correlations = _correlations(side_a, side_b, label, resamples, seed)
    comparison = Comparison(
        result,
        side_a,
        side_b,
        key,
        description,
        correlations,
        time.perf_counter() - started,
        resamples,
        seed,
        checked,
    )
    if output_json is not None:
        write_output_json(comparison.as_dict(), os.fspath(output_json))
    if report is not None:
        from simkernel.batch.report import write_compare_report

        write_compare_report(comparison, os.fspath(report), label, {**options, "mode": metric})
    return comparison


def question_columns(options: dict[str, Any]) -> list[str]:
    """The columns that say which question a row is, as ``options`` name them (or by default): the question
    (:data:`QUESTION_COLUMN`), the ground truth, the references. Not the predicted answers: two systems'
    answers to one question differ."""
    names = [
        QUESTION_COLUMN,
        options.get("ground_truth") or DEFAULT_COLUMNS["ground_truth"],
        options.get("references") or DEFAULT_COLUMNS["references"],
    ]
    predicted = options.get("predicted") or DEFAULT_COLUMNS["predicted"]
    return [name for name in dict.fromkeys(names) if name != predicted]


def pairing_text(checked: list[str]) -> str:
    """How rows paired in order were checked, for the printed result and the report."""
    if checked:
        return f"in order; {', '.join(repr(c) for c in checked)} equal on every row"
    return (
        f"in order, unchecked: the files share none of the columns {QUESTION_COLUMN!r}, "
        f"{DEFAULT_COLUMNS['ground_truth']!r} or {DEFAULT_COLUMNS['references']!r} "
        "(--ground-truth, --references); give --key COLUMN to join the rows on an id"
    )


def _check_same_questions(a: Table, b: Table, candidates: list[str]) -> list[str]:
    """Rows paired in order must be the same questions: each of ``candidates`` that both files have must be
    equal row by row (DataError naming the first row that differs). Returns the columns checked."""
    shared = [name for name in candidates if name in a.columns and name in b.columns]
    differ = [
        i
        for i, (row_a, row_b) in enumerate(zip(a.rows, b.rows, strict=True))
        if any(_cell_text(row_a.get(name)) != _cell_text(row_b.get(name)) for name in shared)
    ]
    if differ:
        i = differ[0]
        name = next(c for c in shared if _cell_text(a.rows[i].get(c)) != _cell_text(b.rows[i].get(c)))
        found_a, found_b = _short(a.rows[i].get(name)), _short(b.rows[i].get(name))
        raise DataError(
            f"without --key the rows pair in order, but {a.source} line {a.line_numbers[i]} and {b.source} line {b.line_numbers[i]} differ in {name!r} ({found_a} against {found_b}; {len(differ)} of {len(a)} rows differ): give --key COLUMN to join the rows on a column that names each question (an id), or put both files' rows in one order"
        )
    return shared


def _cell_text(value: Any) -> str:
    return _key_text(value).strip() if value is not None else ""


def _short(value: Any, limit: int = 40) -> str:
    text = _cell_text(value)
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _correlations(
    a: Side, b: Side, label: str | None, resamples: int, seed: int
) -> dict[str, dict[str, Any]] | None:
    if label is None:
        return None
    from simkernel.batch.summary import figure_intervals
    from simkernel.stats.correlation import pearson, spearman

    out: dict[str, dict[str, Any]] = {}
    for name, side in (("A", a), ("B", b)):
        if side.labels is None:
            continue
        keep = ~np.isnan(side.labels)
        if keep.sum() < 2:
            out[name] = {
                "labelled_rows": int(keep.sum()),
                "pearson": None,
                "spearman": None,
                "intervals": None,
                "no_interval": {},
            }
            continue
        x, y = side.scores[keep], side.labels[keep]
        intervals, reasons = figure_intervals(side.scores, keep, y, resamples, seed)
        out[name] = {
            "labelled_rows": int(keep.sum()),
            "pearson": pearson(x, y),
            "spearman": spearman(x, y),
            "intervals": intervals,
            "no_interval": reasons,
        }
    if a.labels is not None and b.labels is not None:
        both = ~np.isnan(a.labels) & ~np.isnan(b.labels)
        if both.sum() >= 2:
            out[PAIRED_DIFFERENCE] = _difference(a, b, both, resamples, seed)
    return out


def _difference(a: Side, b: Side, both: np.ndarray, resamples: int, seed: int) -> dict[str, Any]:
    """B's Pearson and Spearman minus A's on the rows labelled in both, with paired bootstrap intervals
    (the same resamples of the rows for both runs)."""
    from simkernel.stats.correlation import pearson, spearman
    from simkernel.stats.intervals import paired_difference_intervals

    xa, ya, xb, yb = a.scores[both], a.labels[both], b.scores[both], b.labels[both]  # type: ignore[index]
    found = paired_difference_intervals(xa, ya, xb, yb, resamples=resamples, seed=seed)
    return {
        "labelled_rows": int(both.sum()),
        "pearson": pearson(xb, yb) - pearson(xa, ya),
        "spearman": spearman(xb, yb) - spearman(xa, ya),
        "intervals": {name: v.as_dict() if v is not None else None for name, v in found.items()},
        "no_interval": dict(found.reasons),
    }


def _labels(values: list[float | None] | None) -> np.ndarray | None:
    if values is None:
        return None
    return np.asarray([math.nan if v is None else v for v in values], dtype=np.float64)


def _found(table: Table) -> str:
    return ", ".join(c if c.isprintable() else repr(c) for c in table.columns) or "none"


def _key_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _check_key(table: Table, key: str) -> None:
    if key not in table.columns:
        raise DataError(
            f"{table.source} has no key column {key!r} (columns found: {_found(table)}); fix --key"
        )
    empty = [
        line
        for row, line in zip(table.rows, table.line_numbers, strict=True)
        if _key_text(row.get(key, "")).strip() in ("", "null")
    ]
    if empty:
        raise DataError(
            f"{table.source} has rows without a key in {key!r} (lines {_lines(empty)}); every row needs a key to be joined on"
        )
    seen: dict[str, list[int]] = {}
    for row, line in zip(table.rows, table.line_numbers, strict=True):
        seen.setdefault(_key_text(row[key]), []).append(line)
    twice = {k: lines for k, lines in seen.items() if len(lines) > 1}
    if twice:
        shown = "; ".join(f"{k!r} on lines {_lines(lines)}" for k, lines in list(twice.items())[:_LISTED])
        more = f" (and {len(twice) - _LISTED} more)" if len(twice) > _LISTED else ""
        raise DataError(
            f"{table.source} has duplicate keys in {key!r}: {shown}{more}; each key must name one row: fix the file or choose another --key"
        )


def _join(a: Table, b: Table, key: str) -> list[int]:
    """For each row of ``a``, the index of ``b``'s row with the same key; DataError naming the keys that
    only one side has."""
    b_index = {_key_text(row[key]): i for i, row in enumerate(b.rows)}
    a_keys = [_key_text(row[key]) for row in a.rows]
    only_a = [k for k in a_keys if k not in b_index]
    a_set = set(a_keys)
    only_b = [k for k in b_index if k not in a_set]
    if only_a or only_b:
        parts = []
        for source, missing, other in ((a.source, only_a, b.source), (b.source, only_b, a.source)):
            if missing:
                shown = ", ".join(repr(k) for k in missing[:_LISTED]) + (
                    ", ..." if len(missing) > _LISTED else ""
                )
                parts.append(f"{len(missing)} key(s) of {source} are missing from {other}: {shown}")
        raise DataError(
            f"the runs do not hold the same rows ({'; '.join(parts)}); compare runs of the same questions, or leave those rows out of both"
        )
    return [b_index[k] for k in a_keys]


def _lines(lines: list[int]) -> str:
    return ", ".join(str(n) for n in lines[:_LISTED]) + (", ..." if len(lines) > _LISTED else "")


def _score_column(table: Table, column: str) -> np.ndarray:
    if column not in table.columns:
        raise DataError(
            f"{table.source} has no score column {column!r} (columns found: {_found(table)}); name it with --score-column, or pass --score to score the texts with --mode first"
        )
    values = np.empty(len(table), dtype=np.float64)
    bad: list[int] = []
    for index, (row, line) in enumerate(zip(table.rows, table.line_numbers, strict=True)):
        number = _number(row.get(column))
        if number is None:
            bad.append(line)
            number = math.nan
        values[index] = number
    if bad:
        raise DataError(
            f"{table.source}: the score column {column!r} holds no finite number on line(s) {_lines(bad)}; every row needs a score"
        )
    return values


def _label_column(table: Table, column: str) -> np.ndarray:
    if column not in table.columns:
        raise DataError(
            f"{table.source} has no label column {column!r} (columns found: {_found(table)}); fix --label"
        )
    values = np.full(len(table), math.nan)
    problems = RowProblems(table.source, table_format(table.format).unit)
    for index, (row, line) in enumerate(zip(table.rows, table.line_numbers, strict=True)):
        try:
            number = parse_label(row.get(column), column)
        except ValueError as exc:
            problems.add(line, str(exc))
            continue
        if number is not None:
            values[index] = number
    problems.raise_if_any()
    return values


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
