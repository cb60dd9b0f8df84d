"""``simkernel score``: the parsed command line becomes a :class:`~simkernel.batch.job.ScoreJob`, the batch
engine runs it (:func:`simkernel.batch.score.run_job`, what ``simkernel.score_file`` runs), and the
summary is printed on stderr unless ``--quiet``."""

from __future__ import annotations

import argparse

from simkernel.batch.job import ScoreJob
from simkernel.batch.score import run_job


def run_score(args: argparse.Namespace) -> int:
    """Run the ``score`` sub-command; returns the exit status (errors are raised as InputError)."""
    summary = run_job(ScoreJob.from_namespace(args))
    if not args.quiet:
        summary.print()
    return 0
