"""``simkernel.score_file``: the batch engine from Python, what ``simkernel score`` runs."""

from __future__ import annotations

import os
from typing import Any

from simkernel.batch.job import STDIO, ScoreJob
from simkernel.batch.summary import Summary

__all__ = ["score_file"]


def score_file(
    input: str | os.PathLike,
    output: str | os.PathLike = STDIO,
    *,
    metric: str = "sas",
    engine: str = "local",
    resume: bool = False,
    progress: bool = False,
    **options: Any,
) -> Summary:
    """Score every row of the table ``input`` and write it to ``output`` with a score column; returns the
    run's :class:`~simkernel.batch.summary.Summary` (``summary.as_dict()`` is ``--summary-json``'s object).

    The same run as ``simkernel score INPUT --output OUTPUT --mode METRIC --engine ENGINE``, byte for byte:
    every row is checked before the model loads (a bad row raises :class:`~simkernel.errors.DataError`
    naming its line, and nothing is written); the output is written beside OUTPUT and renamed onto it when
    complete; ``resume=True`` continues an interrupted run from the rows it had written.

    :param input: a CSV, TSV, JSONL or Parquet file (by extension, or ``input_format=``); with
        ``engine="ray"`` also a folder or glob of Parquet / CSV / TSV files, read on the cluster's nodes.
    :param output: the output file (``"-"``: stdout).
    :param metric: a metric of :func:`simkernel.scoring.metric_names` (``"sas"``, ``"reference"``,
        ``"exact"``, ``"bertscore"``, and any a plugin registers); ``metric_options={...}``: its own settings.
    :param engine: ``"local"`` (this process) or ``"ray"`` (a Ray cluster; ``address=``, ``workers=``,
        ``ray_in_flight=``).
    :param progress: show the progress bar and the output notices on stderr (the command line's default).
    :param options: the other fields of :class:`~simkernel.batch.job.ScoreJob`, named as the command
        line's options (``ground_truth="answer"``, ``label="label"``, ``model=...``, ``precision="int8"``,
        ``threshold=0.7``, ``chunk_rows=...``, ``summary_json=...``, ``resamples=10_000`` and ``seed=0`` (the
        bootstrap of the summary's 95% intervals, ``summary.intervals``; 0 resamples: none), ``report=
        "run.html"`` (an HTML report with charts; the plot extra)); a misspelt one raises TypeError.
    :raises UsageError: settings that do not apply (also a ``ValueError``); :raises DataError: bad input.
    """
    job = ScoreJob(
        file=os.fspath(input),
        output=os.fspath(output),
        mode=metric,
        engine=engine,
        resume=resume,
        quiet=not progress,
        **options,
    )
    from simkernel.batch.score import run_job

    return run_job(job)
