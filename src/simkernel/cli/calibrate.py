"""``simkernel calibrate``: the parsed command line becomes a call of :func:`simkernel.calibrate_file`
(:mod:`simkernel.batch.calibrate`), and its report is printed on stdout unless ``--quiet``."""

from __future__ import annotations

import argparse
import sys

from simkernel.batch.calibrate import calibrate_file

# the command line's options that are calibrate_file's own keyword arguments, or a ScoreJob field
_OWN = ("label", "positive_from", "bootstrap", "seed", "output_json", "resamples", "report")
_JOB = (
    "predicted",
    "ground_truth",
    "references",
    "model",
    "precision",
    "batch_size",
    "threads",
    "cache_dir",
    "aggregation",
    "allow_empty",
    "input_format",
)


def run_calibrate(args: argparse.Namespace) -> int:
    """Run the ``calibrate`` sub-command; returns the exit status (errors are raised as InputError)."""
    report = calibrate_file(
        args.file,
        metric=args.mode,
        progress=not args.quiet,
        **{name: getattr(args, name) for name in (*_OWN, *_JOB) if hasattr(args, name)},
    )
    if not args.quiet:
        print("\n".join(report.lines()), file=sys.stdout)
    return 0
