"""What identifies one run of ``simkernel score`` for ``--resume`` (:mod:`simkernel.tables.partial`)."""

from __future__ import annotations

import os
from typing import Any

from simkernel.batch.job import ScoreJob
from simkernel.batch.rows import columns_of
from simkernel.tables.formats import format_of


def fingerprint(args: ScoreJob, path: str, fmt: str) -> dict[str, Any]:
    """What makes a run's output: the input file (path, size, modification time) and every option that
    changes the output (not the engine, threads or batch size: scores do not depend on them), and the
    score columns of a metric that adds several."""
    stat = os.stat(path)
    identity = {
        "input": os.path.abspath(path),
        "input_bytes": stat.st_size,
        "input_mtime_ns": stat.st_mtime_ns,
        "input_format": fmt,
        "output_format": args.output_format or format_of(args.output),
        "mode": args.mode,
        "columns": columns_of(args),
        "label": args.label,
        "model": args.settings.model if args.metric.loads_model else args.model,
        "precision": args.precision,
        "aggregation": args.aggregation,
        "threshold": args.threshold,
        "score_column": args.score_column,
        "allow_empty": args.allow_empty,
        "chunk_rows": args.chunk_rows,
    }
    if args.metric.several_columns:  # the columns a metric adds (a one-column metric's: the mode says)
        identity["score_columns"] = [name for name, _ in args.metric.output_columns(args.score_column)]
    return identity
