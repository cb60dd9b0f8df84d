"""simkernel on Spark: pandas UDFs for SAS scores, reference match and embeddings (the ``spark`` extra).

Each factory, called on the driver with a SparkSession running, returns a column function::

    from pyspark.sql import SparkSession
    from simkernel.spark import sas_udf

    spark = SparkSession.builder.getOrCreate()
    df = spark.read.parquet("answers.parquet")
    df.withColumn("score", sas_udf()("predicted", "ground_truth")).write.parquet("scored/")

- :func:`metric_udf`: any metric of the scoring core's registry, by name (plugins included).
- :func:`sas_udf`: Haystack's semantic answer similarity (``SASEvaluator``) of a predicted text against
  its ground truth (a string, or an array of correct answers: the best one counts); ``float``.
- :func:`reference_match_udf`: eval_lib's ``ReferenceMatchMetric`` score of a text against an array of
  references, max or mean; ``double``.
- :func:`embedding_udf`: the float32 embedding of a text; ``array<float>``.

What they do for the user (:mod:`simkernel.spark.workers`):

- threads: each task runs onnxruntime on ``spark.task.cpus`` threads (``TaskContext.get().cpus()``), not
  one per host core (onnxruntime ignores ``OMP_NUM_THREADS``; 16 one-CPU tasks on a 16-core executor
  would otherwise start 256 threads); ``threads=N`` overrides it;
- the model loads once per Python worker and settings (Spark reuses its Python workers);
- the model: the factory resolves it on the driver and ships its bundle with ``SparkContext.addFile``; a
  node without it installs that copy into its own store (checked against the bundle's manifest), so no
  node needs the hub (``ship=False`` turns the shipping off, when every node has the model or a shared
  ``SIMKERNEL_HOME``);
- nulls: a row with a null text gets a null result.

Importing this module does not import pyspark; the factories import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simkernel._lazy import lazy_face

_LAZY = {
    "sas_udf": "simkernel.spark.udfs",
    "metric_udf": "simkernel.spark.udfs",
    "reference_match_udf": "simkernel.spark.udfs",
    "embedding_udf": "simkernel.spark.udfs",
    "task_threads": "simkernel.spark.workers",
    "ship_model": "simkernel.spark.workers",
    "loaded": "simkernel.spark.workers",
}

__all__ = list(_LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.spark.udfs import embedding_udf, metric_udf, reference_match_udf, sas_udf  # noqa: F401
    from simkernel.spark.workers import loaded, ship_model, task_threads  # noqa: F401

__getattr__, __dir__ = lazy_face(__name__, _LAZY, globals())
