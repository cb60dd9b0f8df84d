"""The settings of a scoring run, defined and checked once for every entry point.

Every way in (the drop-in clones, ``score_file`` and ``simkernel score``, the Ray and Spark engines, the
server, the pytest plugin, the tool adapters) turns its own arguments into one :class:`ScoringSettings`
before a metric sees them, as infinity turns its command line into a typed ``EngineArgs``. The defaults
below are the package's only definitions of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
from simkernel.runtime.store.layout import PRECISIONS as PRECISION_FILES

__all__ = [
    "AGGREGATIONS",
    "DEFAULT_AGGREGATION",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MODEL",
    "DEFAULT_PRECISION",
    "PRECISIONS",
    "ScoringSettings",
    "check_aggregation",
    "check_model",
    "check_precision_name",
    "check_threads",
]

PRECISIONS: tuple[str, ...] = tuple(PRECISION_FILES)  # ("fp32", "int8", "bf16")
DEFAULT_PRECISION = "fp32"
DEFAULT_BATCH_SIZE = 32  # texts (bi-encoder) or pairs (cross-encoder) per forward pass
AGGREGATIONS: tuple[str, ...] = ("max", "mean")  # how a text's scores against several references combine
DEFAULT_AGGREGATION = "max"


def check_model(model: Any) -> str:
    """``model`` as a string (a model id or a folder; ``os.PathLike`` accepted); ValueError otherwise."""
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if not isinstance(model, str) or not model:
        raise ValueError(f"model must be a model id or a path (a non-empty string), got {model!r}")
    return model


def check_precision_name(precision: Any) -> str:
    """``precision`` if it is one of :data:`PRECISIONS` (whether this CPU runs it is checked at load)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return precision


def check_threads(threads: Any) -> int | None:
    """``threads`` if it is None (one per CPU) or a positive integer; ValueError otherwise."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be None or a positive integer, got {threads!r}")
    return threads


def check_batch_size(batch_size: Any) -> int:
    """``batch_size`` if it is a positive integer; ValueError otherwise."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    return batch_size


def check_aggregation(aggregation: Any) -> str:
    """``aggregation`` if it is one of :data:`AGGREGATIONS`; ValueError otherwise."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be 'max' or 'mean', got {aggregation!r}")
    return aggregation


@dataclass(frozen=True)
class ScoringSettings:
    """What a metric may be configured with; each metric reads the fields it names in
    :attr:`simkernel.scoring.Metric.settings` and the entry points refuse the others.

    - ``model``: a model id of the store or the hub, or a folder (bundle or checkpoint);
    - ``precision``: ``"fp32"``, ``"int8"`` (the bundle's int8 graph) or ``"bf16"`` (CPUs with native bf16);
    - ``threads``: onnxruntime intra-op threads (None: one per CPU);
    - ``batch_size``: texts or pairs per forward pass (a score never depends on it);
    - ``cache_dir``: the persistent embedding cache's folder (None: ``$SIMKERNEL_CACHE_DIR`` if set, else off);
    - ``aggregation``: how a text's score against several references combines, ``"max"`` or ``"mean"``;
    - ``options``: a registered metric's own settings (name -> value), checked by that metric.
    """

    model: str = DEFAULT_MODEL
    precision: str = DEFAULT_PRECISION
    threads: int | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    cache_dir: str | None = None
    aggregation: str = DEFAULT_AGGREGATION
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", check_model(self.model))
        check_precision_name(self.precision)
        check_threads(self.threads)
        check_batch_size(self.batch_size)
        check_aggregation(self.aggregation)
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", os.fspath(self.cache_dir))

    @classmethod
    def from_options(cls, **given: Any) -> ScoringSettings:
        """Settings from keyword arguments where None means "the default" (as a command line's unset
        options are); unknown names raise TypeError naming them."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - names)
        if unknown:
            raise TypeError(f"unknown scoring setting(s) {unknown}; the settings are {sorted(names)}")
        return cls(**{name: value for name, value in given.items() if value is not None})

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain values (shipped to Ray and Spark workers, which rebuild them)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
