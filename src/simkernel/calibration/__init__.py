"""Thresholds from human labels: :func:`calibrate` and its :class:`Calibration` result.

``simkernel.calibrate(scores, labels)`` finds the score threshold that best reproduces binary human
judgments (F1-maximising, with Youden's J beside it and a bootstrap interval); ``simkernel calibrate``
on the command line scores a labelled file first. :mod:`simkernel.calibration.thresholds` resolves
``threshold="calibrated"`` from the thresholds the model registry carries (and imports no numpy, so the
pytest plugin can use it at start-up). Names resolve lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simkernel._lazy import lazy_face

_LAZY = {
    "Calibration": "simkernel.calibration.fit",
    "calibrate": "simkernel.calibration.fit",
    "ThresholdStats": "simkernel.calibration.binary",
}

__all__ = ["Calibration", "ThresholdStats", "calibrate"]

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.calibration.binary import ThresholdStats
    from simkernel.calibration.fit import Calibration, calibrate


__getattr__, __dir__ = lazy_face(__name__, _LAZY, globals())
