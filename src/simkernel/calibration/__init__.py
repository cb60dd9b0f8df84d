"""Thresholds from human labels: :func:`calibrate` and its :class:`Calibration` result.

``simkernel.calibrate(scores, labels)`` finds the score threshold that best reproduces binary human
judgments (F1-maximising, with Youden's J beside it and a bootstrap interval); ``simkernel calibrate``
on the command line scores a labelled file first. :mod:`simkernel.calibration.thresholds` resolves
``threshold="calibrated"`` from the thresholds the model registry carries.
"""

from __future__ import annotations

from simkernel.calibration.binary import ThresholdStats
from simkernel.calibration.calibrate import Calibration, calibrate

__all__ = ["Calibration", "ThresholdStats", "calibrate"]
