"""simkernel on Ray Data: callable classes for ``Dataset.map_batches`` (the ``ray`` extra).

Each class loads its model once per actor, in ``__init__``, and scores whole batches::

    import ray
    from ray.data import ActorPoolStrategy
    from simkernel.ray import SASScorer, pool_size

    ds = ray.data.read_csv("examples/answers.csv", override_num_blocks=4)
    ds = ds.map_batches(SASScorer, fn_constructor_kwargs=dict(model="sentence-transformers/all-MiniLM-L6-v2"),
                        compute=ActorPoolStrategy(size=pool_size(num_cpus=1)), num_cpus=1,
                        batch_size=4096, batch_format="pandas")
    ds.write_parquet("scored/")

- :class:`SASScorer`: Haystack's semantic answer similarity (``SASEvaluator``) of ``predicted`` against
  ``ground_truth`` (a text, or a list of correct answers: the best one counts); float32 ``score``.
- :class:`ReferenceMatchScorer`: eval_lib's ``ReferenceMatchMetric`` score of ``predicted`` against the
  list in ``references`` (a list, or a JSON list in a string), max or mean; float64 ``score``.
- :class:`MetricScorer`: any metric of the scoring core's registry (``metric="sas"``, ``"reference"``,
  ``"exact"`` or one a plugin registers), its score in the metric's type.
- :class:`Embedder`: the float32 embedding of ``text`` (a fixed-size list column).
- :func:`pool_size`: the actors that fit the cluster beside the pipeline's read and write tasks (a pool
  larger than that waits for ever; ``pool_size(size=4)`` checks a size and names the CPUs it lacks).

Batches may be pandas DataFrames (``batch_format="pandas"``), pyarrow Tables (``"pyarrow"``) or dicts of
numpy arrays (``"numpy"``); each class returns the batch's own columns plus its output column, in the
same format and row order. What they do for the user:

- threads: each actor runs onnxruntime on as many threads as the CPUs Ray gave it (``num_cpus``), not on
  one per host core (onnxruntime ignores ``OMP_NUM_THREADS``; four actors on a 16-core host would
  otherwise start 64 threads);
- the model: an actor resolves it as everywhere (a local folder, the node's store, the hub); a node that
  has neither gets it from a node of the cluster that has it (the driver's, when the driver prepared or
  downloaded it), through Ray's object store, installed into that node's store atomically and once
  (``ship_model=True``, the default);
- order: Ray Data spreads work by blocks and keeps row order only with
  ``DataContext.get_current().execution_options.preserve_order = True``; a dataset of one block runs on one
  actor. ``simkernel score --engine ray`` does both for you (see docs/ray.md).

Importing this module does not import ray; the classes import it when an actor builds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simkernel._lazy import lazy_face

_LAZY = {
    "MetricScorer": "simkernel.ray.scorers",
    "SASScorer": "simkernel.ray.scorers",
    "ReferenceMatchScorer": "simkernel.ray.scorers",
    "Embedder": "simkernel.ray.scorers",
    "BlockScorer": "simkernel.ray.scorers",
    "actor_threads": "simkernel.ray.resources",
    "pool_size": "simkernel.ray.resources",
    "ensure_model": "simkernel.ray.shipping",
}

__all__ = list(_LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.ray.resources import actor_threads, pool_size  # noqa: F401
    from simkernel.ray.scorers import (  # noqa: F401
        BlockScorer,
        Embedder,
        MetricScorer,
        ReferenceMatchScorer,
        SASScorer,
    )
    from simkernel.ray.shipping import ensure_model  # noqa: F401


__getattr__, __dir__ = lazy_face(__name__, _LAZY, globals())
