"""``threshold="calibrated"``: the threshold a model's registry entry carries; where a threshold came from.

The registry (:mod:`simkernel.runtime.acquisition.registry`) holds, for some models, thresholds
calibrated on human labels per precision (``CalibratedThreshold``: which data, which label rule, the
bootstrap interval, F1; int8 takes the one fitted on fp32 scores, which do not depend on the CPU). The
metrics, ``simkernel score --threshold calibrated`` and the pytest plugin resolve ``"calibrated"`` here;
a model without one is an error that says so and what to pass instead. Standard library only (the pytest
plugin imports this at start-up).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

CALIBRATED = "calibrated"


@dataclass(frozen=True)
class Threshold:
    """A resolved threshold: ``value`` and ``source``, a phrase saying where it came from."""

    value: float
    source: str


def parse_threshold(value: object) -> float | str:
    """``value`` as a threshold: a finite real number (a string holding one is read), or ``"calibrated"``.

    Raises TypeError / ValueError naming the value and the two accepted forms.
    """
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == CALIBRATED:
            return CALIBRATED
        try:
            value = float(text)
        except ValueError:
            raise ValueError(
                f"threshold {text!r} is neither a number nor 'calibrated'; give e.g. 0.7, or 'calibrated' for the threshold calibrated on human labels for the model"
            ) from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"threshold must be a number or 'calibrated', got {type(value).__name__}: {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"threshold must be a finite number or 'calibrated', got {value!r}")
    return float(value)


def calibrated_threshold(model: object, precision: str, example: str = "threshold=0.7") -> Threshold:
    """The calibrated threshold of ``model`` (a registry id or alias) at ``precision``.

    Raises ValueError when the registry has none for them, naming the models that have one and, as the
    fix, a number given the caller's way (``example``: ``threshold=0.7``, or ``--threshold 0.7``).
    """
    from simkernel.runtime.acquisition.registry import KNOWN_MODELS, known_model

    known = known_model(model) if isinstance(model, str) else None
    entry = known.calibrated_threshold(precision) if known is not None else None
    if known is None or entry is None:
        having = sorted({m.id for m in KNOWN_MODELS if m.calibrated})
        raise ValueError(
            f"model {model!r} has no calibrated threshold for {precision} (models with one: {', '.join(having) or 'none'}); pass a number instead, e.g. {example}, or find one for your data with `simkernel calibrate FILE --label COL`"
        )
    source = f"calibrated for {known.id} ({precision}) on {entry.data}, {entry.rule}"
    if entry.fitted_on not in (None, precision):
        source += f", fitted on the {entry.fitted_on} scores (the same on every CPU)"
    return Threshold(entry.threshold, source)


def resolve_threshold(value: object, model: object, precision: str, given_by: str) -> Threshold:
    """``value`` (a number or ``"calibrated"``) as a :class:`Threshold`; ``given_by`` names who set it
    (an argument, an option), for the source of a number."""
    spec = parse_threshold(value)
    if spec == CALIBRATED:
        return calibrated_threshold(model, precision)
    return Threshold(float(spec), given_by)
