"""``simkernel compare``: the parsed command line becomes a call of :func:`simkernel.compare_files`
(:mod:`simkernel.batch.compare`), and its result is printed on stdout unless ``--quiet``."""

from __future__ import annotations

import argparse
import sys

from simkernel.batch.compare import compare_files

_OWN = ("key", "score_column", "score", "predicted_b", "label", "tolerance", "top", "resamples", "seed")
_OUT = ("output_json", "report")
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
    "metric_options",
    "allow_empty",
    "input_format",
)


def run_compare(args: argparse.Namespace) -> int:
    """Run the ``compare`` sub-command; returns the exit status (errors are raised as InputError)."""
    files = list(args.files)
    if len(files) > 2:
        from simkernel.errors import UsageError

        raise UsageError(
            f"compare takes one or two files, got {len(files)}: RUN_A RUN_B, or one file with --predicted-b"
        )
    comparison = compare_files(
        files[0],
        files[1] if len(files) == 2 else None,
        metric=args.mode,
        progress=not args.quiet,
        **{name: getattr(args, name) for name in (*_OWN, *_OUT) if hasattr(args, name)},
        **{name: getattr(args, name) for name in _JOB if getattr(args, name, None) not in (None, False)},
    )
    if not args.quiet:
        print("\n".join(comparison.lines()), file=sys.stdout)
    return 0
