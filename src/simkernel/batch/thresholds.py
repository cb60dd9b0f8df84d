"""The ``--threshold`` of ``simkernel score``: a number, or ``calibrated`` (the threshold the model's
registry entry carries, calibrated on human labels), and the summary note that says where it came from."""

from __future__ import annotations

from simkernel.batch.job import ScoreJob
from simkernel.errors import UsageError


def resolve_cli_threshold(args: ScoreJob) -> tuple[float | None, list[str]]:
    """(the threshold of ``args``, or None when none applies; summary notes)."""
    threshold = args.threshold
    if threshold is None:
        return args.metric.default_threshold, []
    if threshold != "calibrated":
        return float(threshold), []
    if not args.metric.loads_model:
        raise UsageError(
            f"--threshold calibrated does not apply to --mode {args.mode} (it has no model to calibrate); drop it"
        )
    from simkernel.calibration.thresholds import calibrated_threshold

    try:
        settings = args.settings
        resolved = calibrated_threshold(settings.model, settings.precision, example="--threshold 0.7")
    except ValueError as exc:
        raise UsageError(f"--threshold calibrated: {exc}") from None
    return resolved.value, [f"threshold {resolved.value:.4f}: {resolved.source}"]
