"""The ``--threshold`` of ``simkernel score``: a number, or ``calibrated`` (the threshold the model's
registry entry carries, calibrated on human labels), and the summary note that says where it came from."""

from __future__ import annotations

import argparse

from simkernel.cli.errors import UsageError
from simkernel.cli.modes import DEFAULT_PRECISION
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL

DEFAULT_REFERENCE_THRESHOLD = 0.7  # eval_lib's ReferenceMatchMetric default


def resolve_cli_threshold(args: argparse.Namespace) -> tuple[float | None, list[str]]:
    """(the threshold of ``args``, or None when none applies; summary notes)."""
    threshold = args.threshold
    if threshold is None:
        return (DEFAULT_REFERENCE_THRESHOLD if args.mode == "reference" else None), []
    if threshold != "calibrated":
        return float(threshold), []
    if args.mode == "exact":
        raise UsageError("--threshold calibrated does not apply to --mode exact (scores are 0 or 1); drop it")
    from simkernel.calibration.thresholds import calibrated_threshold

    try:
        resolved = calibrated_threshold(args.model or DEFAULT_MODEL, args.precision or DEFAULT_PRECISION)
    except ValueError as exc:
        raise UsageError(f"--threshold calibrated: {exc}") from None
    return resolved.value, [f"threshold {resolved.value:.4f}: {resolved.source}"]
