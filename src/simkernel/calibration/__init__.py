"""Thresholds from human labels: :func:`calibrate` and its :class:`Calibration` result.

``simkernel.calibrate(scores, labels)`` finds the score threshold that best reproduces binary human
judgments (F1-maximising, with Youden's J beside it and a bootstrap interval); ``simkernel calibrate``
on the command line scores a labelled file first. :mod:`simkernel.calibration.thresholds` resolves
``threshold="calibrated"`` from the thresholds the model registry carries (and imports no numpy, so the
pytest plugin can use it at start-up). Names resolve lazily.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "Calibration": "simkernel.calibration.fit",
    "calibrate": "simkernel.calibration.fit",
    "ThresholdStats": "simkernel.calibration.binary",
}

__all__ = ["Calibration", "ThresholdStats", "calibrate"]

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.calibration.binary import ThresholdStats
    from simkernel.calibration.fit import Calibration, calibrate


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'simkernel.calibration' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
