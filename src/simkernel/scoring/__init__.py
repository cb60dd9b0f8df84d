"""The scoring core: the one place where scoring is defined, which every entry point calls.

- :mod:`~simkernel.scoring.settings`: :class:`ScoringSettings` (model, precision, threads, batch size, cache
  folder, aggregation, a metric's own options), checked once; the package's only defaults.
- :mod:`~simkernel.scoring.metric`: what a metric is (:class:`Metric`, :class:`Scorer`).
- :mod:`~simkernel.scoring.metrics`: one module per metric (``sas``, ``reference``, ``exact``).
- :mod:`~simkernel.scoring.registry`: :func:`get_metric`, :func:`metric_names`, :func:`register_metric`
  (and plugins through the ``simkernel.metrics`` entry-point group).

Importing this package loads no model and none of onnxruntime's Python layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simkernel._lazy import lazy_face

_LAZY = {
    "ScoringSettings": "simkernel.scoring.settings",
    "DEFAULT_MODEL": "simkernel.scoring.settings",
    "PRECISIONS": "simkernel.scoring.settings",
    "AGGREGATIONS": "simkernel.scoring.settings",
    "Metric": "simkernel.scoring.metric",
    "Scorer": "simkernel.scoring.metric",
    "get_metric": "simkernel.scoring.registry",
    "metric_names": "simkernel.scoring.registry",
    "register_metric": "simkernel.scoring.registry",
}
__all__ = [
    "AGGREGATIONS",
    "DEFAULT_MODEL",
    "Metric",
    "PRECISIONS",
    "Scorer",
    "ScoringSettings",
    "get_metric",
    "metric_names",
    "register_metric",
]

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.scoring.metric import Metric, Scorer
    from simkernel.scoring.registry import get_metric, metric_names, register_metric
    from simkernel.scoring.settings import AGGREGATIONS, DEFAULT_MODEL, PRECISIONS, ScoringSettings

__getattr__, __dir__ = lazy_face(__name__, _LAZY, globals())
