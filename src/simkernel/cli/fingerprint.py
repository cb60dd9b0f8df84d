"""What identifies one run of ``simkernel score`` for ``--resume`` (:mod:`simkernel.cli.partial`)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from simkernel.cli.io import format_of
from simkernel.cli.rows import columns_of
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL


def fingerprint(args: argparse.Namespace, path: str, fmt: str) -> dict[str, Any]:
    """What makes a run's output: the input file (path, size, modification time) and every option that
    changes the output (not the engine, threads or batch size: scores do not depend on them)."""
    stat = os.stat(path)
    return {
        "input": os.path.abspath(path),
        "input_bytes": stat.st_size,
        "input_mtime_ns": stat.st_mtime_ns,
        "input_format": fmt,
        "output_format": args.output_format or format_of(args.output),
        "mode": args.mode,
        "columns": columns_of(args),
        "label": args.label,
        "model": args.model or (DEFAULT_MODEL if args.mode != "exact" else None),
        "precision": args.precision,
        "aggregation": args.aggregation,
        "threshold": args.threshold,
        "score_column": args.score_column,
        "allow_empty": args.allow_empty,
        "chunk_rows": args.chunk_rows,
    }
