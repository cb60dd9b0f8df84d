"""A metric added in one module (:mod:`tests.scoring.length_ratio_metric`, declared as an entry point) is
scored by ``simkernel.spark.metric_udf`` on real Spark workers with no other change: the workers find it
in the registry by name, as they find the built-in ones."""

from __future__ import annotations

import pytest
from tests.scoring.plugin import install_here, plugin_path, uninstall_here, write_plugin
from tests.scoring.test_metric_plugin import ROWS, expected

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")


def test_a_plugin_metric_scores_on_the_workers(spark, tmp_path):
    from simkernel.spark import metric_udf

    folder = write_plugin(tmp_path / "site")
    install_here(folder)
    environment = spark.sparkContext.environment
    saved = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = plugin_path(folder)  # the workers' path, as a plugin installed there
    try:
        rows = [(i, p, g) for i, (p, g) in enumerate(ROWS * 10)]
        df = spark.createDataFrame(rows, "id long, predicted string, ground_truth string").repartition(3)
        scored = df.withColumn("score", metric_udf("length_ratio")("predicted", "ground_truth"))
        assert dict(scored.dtypes)["score"] == "double"
        got = {r.id: r.score for r in scored.collect()}
        assert [got[i] for i, _, _ in rows] == pytest.approx(expected() * 10, abs=1e-15)
    finally:
        if saved is None:
            environment.pop("PYTHONPATH", None)
        else:
            environment["PYTHONPATH"] = saved
        uninstall_here(folder)


def test_the_built_in_metrics_through_metric_udf_equal_the_named_udfs(spark):
    from tests.spark.conftest import MODEL

    from simkernel.spark import metric_udf, sas_udf

    rows = [(i, p, g) for i, (p, g) in enumerate(ROWS)]
    df = spark.createDataFrame(rows, "id long, predicted string, ground_truth string")
    got = df.select(
        "id",
        metric_udf("sas", model=MODEL)("predicted", "ground_truth").alias("a"),
        sas_udf(MODEL)("predicted", "ground_truth").alias("b"),
        metric_udf("exact")("predicted", "ground_truth").alias("e"),
    ).collect()
    assert all(r.a == r.b for r in got) and len({r.a for r in got}) > 1
    assert [r.e for r in sorted(got, key=lambda r: r.id)] == [0, 0, 0, 1]


def test_a_multi_column_metric_is_a_struct_column(spark, tmp_path):
    from tests.scoring.plugin import PAIR_ENTRY
    from tests.scoring.test_multi_column_metric import differences, ratios

    from simkernel.spark import metric_udf

    folder = write_plugin(tmp_path / "site", PAIR_ENTRY)
    install_here(folder)
    environment = spark.sparkContext.environment
    saved = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = plugin_path(folder)
    try:
        rows = [(i, p, g) for i, (p, g) in enumerate(ROWS * 10)]
        rows.append((len(rows), None, "x"))  # a null text: null in every field
        df = spark.createDataFrame(rows, "id long, predicted string, ground_truth string").repartition(3)
        scored = df.withColumn("score", metric_udf("length_pair")("predicted", "ground_truth"))
        assert dict(scored.dtypes)["score"] == "struct<difference:bigint,ratio:double>"
        got = {r.id: (r.score.difference, r.score.ratio) for r in scored.collect()}
        assert [got[i][0] for i, _, _ in rows[:-1]] == differences() * 10
        assert [got[i][1] for i, _, _ in rows[:-1]] == pytest.approx(ratios() * 10, abs=1e-15)
        assert got[len(rows) - 1] == (None, None)
    finally:
        if saved is None:
            environment.pop("PYTHONPATH", None)
        else:
            environment["PYTHONPATH"] = saved
        uninstall_here(folder)
