"""The metrics every entry point knows: the built-in ones and those that plugins register.

``get_metric(name)`` is the only lookup. Built-in metrics are modules of :mod:`simkernel.scoring.metrics`
(imported on first lookup); a package adds one by declaring an entry point in the group
``simkernel.metrics`` whose object is a :class:`~simkernel.scoring.metric.Metric` (loaded on the first
lookup of an unknown name), or, in-process, with :func:`register_metric`. Entry points reach every process
that imports simkernel from the same environment, Ray and Spark workers included, so a metric registered so
needs no change anywhere else.
"""

from __future__ import annotations

import importlib
import threading
from importlib.metadata import entry_points

from simkernel.scoring.metric import Metric

__all__ = ["ENTRY_POINT_GROUP", "get_metric", "metric_names", "register_metric"]

ENTRY_POINT_GROUP = "simkernel.metrics"
# name -> module holding its METRIC; imported on first lookup, so listing names imports nothing heavy
BUILT_IN = {
    "sas": "simkernel.scoring.metrics.sas",
    "reference": "simkernel.scoring.metrics.reference",
    "exact": "simkernel.scoring.metrics.exact",
    "bertscore": "simkernel.scoring.metrics.bertscore",
}

_registered: dict[str, Metric] = {}
_lock = threading.Lock()
_plugins_loaded = False


def register_metric(metric: Metric, *, replace: bool = False) -> Metric:
    """Add ``metric`` under ``metric.name``; ValueError if the name is taken (unless ``replace``)."""
    if not isinstance(metric, Metric):
        raise TypeError(f"register_metric takes a simkernel.scoring.Metric, got {type(metric).__name__}")
    with _lock:
        if not replace and (metric.name in BUILT_IN or metric.name in _registered):
            raise ValueError(
                f"a metric named {metric.name!r} is already registered; choose another name or pass replace=True"
            )
        _registered[metric.name] = metric
    return metric


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in BUILT_IN or entry.name in _registered:
            continue
        metric = entry.load()
        if not isinstance(metric, Metric) or metric.name != entry.name:
            raise TypeError(
                f"the entry point {entry.name!r} of group {ENTRY_POINT_GROUP!r} ({entry.value}) must be a simkernel.scoring.Metric named {entry.name!r}"
            )
        register_metric(metric)
    _plugins_loaded = True


def metric_names() -> list[str]:
    """Every metric's name: the built-in ones first, then the plugins', in registration order."""
    _load_plugins()
    return [*BUILT_IN, *(name for name in _registered if name not in BUILT_IN)]


def get_metric(name: str) -> Metric:
    """The metric named ``name``; ValueError listing the known names for an unknown one."""
    if name in _registered:
        return _registered[name]
    module = BUILT_IN.get(name)
    if module is not None:
        return importlib.import_module(module).METRIC
    _load_plugins()
    if name in _registered:
        return _registered[name]
    known = ", ".join(metric_names())
    raise ValueError(f"unknown metric {name!r}; choose one of: {known}")
