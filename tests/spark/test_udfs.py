"""``simkernel.spark``'s pandas UDFs on a real local Spark (``local[2]``): scores and embeddings equal to the
local engine's in this process bit for bit (SASEvaluator.run, ReferenceMatchMetric, TextEncoder.encode),
over several partitions; the model reaches workers whose store is empty and whose hub is off only through
SparkContext.addFile; nulls give null results; onnxruntime runs on spark.task.cpus threads per task."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import numpy as np
import pytest
from tests.spark.conftest import MODEL

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

PAIRS = [
    ("Paris", "The capital of France is Paris."),
    ("Berlin", "Munich"),
    ("Лев Толстой", "Толстой"),
    ("北京", "北京是中国的首都。"),
    ("a cat on a mat", "A cat was sitting on the mat."),
    ("1945", "in 1945"),
    ("", "an empty prediction"),
    ("the same words", "the same words"),
]
ROWS = [(i, g + f" #{i % 7}", p) for i, (g, p) in enumerate(PAIRS * 25)]  # 200 rows, 56 distinct pairs


def _frame(spark, rows, schema, partitions=4):
    return spark.createDataFrame(rows, schema).repartition(partitions)


def test_sas_scores_are_the_evaluators_bit_for_bit(spark):
    from simkernel.components.evaluators import SASEvaluator
    from simkernel.spark import sas_udf

    df = _frame(spark, ROWS, "id long, ground_truth string, predicted string")
    scored = df.withColumn("score", sas_udf(MODEL)("predicted", "ground_truth"))
    assert dict(scored.dtypes)["score"] == "float"
    got = {r.id: r.score for r in scored.collect()}
    expected = SASEvaluator(model=MODEL).run([g for _, g, _ in ROWS], [p for _, _, p in ROWS])
    assert [got[i] for i, _, _ in ROWS] == [float(np.float32(s)) for s in expected["individual_scores"]]
    assert len(set(got.values())) > 10  # not a constant


def test_a_list_of_correct_answers_scores_its_best(spark):
    from simkernel.components.evaluators import SASEvaluator
    from simkernel.spark import sas_udf

    rows = [(i, [g, "something else entirely"], p) for i, g, p in ROWS[:40]]
    df = _frame(spark, rows, "id long, truths array<string>, predicted string", 3)
    got = {r.id: r.s for r in df.select("id", sas_udf(MODEL)("predicted", "truths").alias("s")).collect()}
    expected = SASEvaluator(model=MODEL).run([t for _, t, _ in rows], [p for _, _, p in rows])
    assert [got[i] for i, _, _ in rows] == [float(np.float32(s)) for s in expected["individual_scores"]]


@pytest.mark.parametrize("aggregation", ["max", "mean"])
def test_reference_match_is_the_metrics_bit_for_bit(spark, aggregation):
    from simkernel import EvalTestCase
    from simkernel.metrics import ReferenceMatchMetric
    from simkernel.spark import reference_match_udf

    rows = [(i, p, [g, PAIRS[(i + 1) % len(PAIRS)][0]] if i % 5 else []) for i, g, p in ROWS[:60]]
    df = _frame(spark, rows, "id long, output string, refs array<string>", 3)
    udf = reference_match_udf(MODEL, aggregation=aggregation)
    scored = df.select("id", udf("output", "refs").alias("score"))
    assert dict(scored.dtypes)["score"] == "double"
    got = {r.id: r.score for r in scored.collect()}

    async def reference(output, refs):
        metric = ReferenceMatchMetric(references=refs, aggregation=aggregation, embedding_provider="local")
        return (await metric.evaluate(EvalTestCase(input="q", actual_output=output)))["score"]

    expected = [asyncio.run(reference(p, refs)) for _, p, refs in rows]
    assert [got[i] for i, _, _ in rows] == expected
    assert got[0] == 0.0 and got[1] > 0.0  # no references: 0.0, as the metric


def test_embeddings_are_the_encoders_bit_for_bit(spark):
    from simkernel.runtime import TextEncoder
    from simkernel.spark import embedding_udf

    texts = sorted({t for _, g, p in ROWS for t in (g, p)})
    df = _frame(spark, list(enumerate(texts)), "id long, text string", 3)
    scored = df.select("id", embedding_udf(MODEL)("text").alias("embedding"))
    assert dict(scored.dtypes)["embedding"] == "array<float>"
    got = {r.id: np.asarray(r.embedding, dtype=np.float32) for r in scored.collect()}
    encoder = TextEncoder(MODEL)
    assert np.array_equal(
        np.stack([got[i] for i in range(len(texts))]), encoder.encode(texts, normalize=False)
    )
    unit = df.select("id", embedding_udf(MODEL, normalize=True)("text").alias("e")).collect()
    got = {r.id: np.asarray(r.e, dtype=np.float32) for r in unit}
    assert np.array_equal(
        np.stack([got[i] for i in range(len(texts))]), encoder.encode(texts, normalize=True)
    )


def test_a_null_text_gives_a_null_result_and_the_other_rows_their_scores(spark):
    from simkernel.components.evaluators import SASEvaluator
    from simkernel.spark import embedding_udf, reference_match_udf, sas_udf

    rows = [
        (0, "Paris", "The capital of France is Paris.", ["Paris"]),
        (1, None, "Munich", ["Berlin"]),
        (2, "Berlin", None, None),
        (3, "Berlin", "Munich", ["Berlin", None]),
    ]
    df = spark.createDataFrame(rows, "id long, truth string, predicted string, refs array<string>")
    out = df.select(
        "id",
        sas_udf(MODEL)("predicted", "truth").alias("sas"),
        reference_match_udf(MODEL)("predicted", "refs").alias("ref"),
        embedding_udf(MODEL)("truth").alias("emb"),
    )
    got = {r.id: r for r in out.collect()}
    assert [got[i].sas is None for i in range(4)] == [False, True, True, False]
    assert [got[i].ref is None for i in range(4)] == [False, False, True, True]
    assert [got[i].emb is None for i in range(4)] == [False, True, False, False]
    expected = SASEvaluator(model=MODEL).run(
        ["Paris", "Berlin"], ["The capital of France is Paris.", "Munich"]
    )
    assert [got[0].sas, got[3].sas] == [float(np.float32(s)) for s in expected["individual_scores"]]


def test_a_column_that_is_not_text_is_an_error_naming_the_argument_and_row(spark):
    from simkernel.spark import sas_udf

    df = spark.createDataFrame([(1, "a"), (2, "b")], "answer long, truth string").coalesce(1)
    with pytest.raises(
        Exception,
        match=r"the predicted texts \(first argument\) must be a text; row 0 of a batch holds int \(1\)",
    ):
        df.select(sas_udf(MODEL)("answer", "truth")).collect()


@pytest.mark.parametrize("cpus", [1, 2])
def test_onnxruntime_runs_on_spark_task_cpus_threads(sparks, cpus):
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    from simkernel.spark import embedding_udf, sas_udf

    spark = sparks.get(cpus)

    def probe(scores: pd.Series) -> pd.Series:  # runs in the worker that scored the rows, after them
        from pyspark import TaskContext

        import simkernel.spark

        report = {"cpus": TaskContext.get().cpus(), "loaded": simkernel.spark.loaded()}
        return pd.Series([json.dumps(report)] * len(scores))

    probe.__annotations__ = {"scores": pd.Series, "return": pd.Series}  # not strings (future annotations)
    probe_udf = pandas_udf(probe, "string")
    df = spark.createDataFrame([(g, p) for _, g, p in ROWS[:40]], "g string, p string").repartition(2)
    reports = df.select(probe_udf(sas_udf(MODEL)("p", "g")).alias("r")).distinct().collect()
    reports += df.select(probe_udf(embedding_udf(MODEL)("p")).alias("r")).distinct().collect()
    loaded = [entry for r in reports for entry in json.loads(r.r)["loaded"]]
    assert {json.loads(r.r)["cpus"] for r in reports} == {cpus}
    assert {entry["kind"] for entry in loaded} >= {"sas", "embed"}
    assert {(entry["threads"], entry["intra_op_threads"]) for entry in loaded} == {(cpus, cpus)}


def test_workers_with_an_empty_store_and_no_hub_get_the_model_from_the_driver(sparks, tmp_path):
    from simkernel.runtime.store import bundles as store
    from simkernel.spark import sas_udf

    home = tmp_path / "node-store"  # a node that has never seen the model; its hub is off
    spark = sparks.get(1, str(home))
    df = spark.createDataFrame([("Paris", "The capital of France is Paris.")], "p string, g string")
    with pytest.raises(Exception, match="cannot find model 'sentence-transformers/all-MiniLM-L6-v2'"):
        df.select(sas_udf(MODEL, ship=False)("p", "g")).collect()  # not shipped: the node cannot find it
    assert not (home / "models" / store.model_dir(MODEL).name).exists()
    (score,) = df.select(sas_udf(MODEL)("p", "g")).first()
    from simkernel.components.evaluators import SASEvaluator

    expected = SASEvaluator(model=MODEL).run(["The capital of France is Paris."], ["Paris"])
    assert score == float(np.float32(expected["individual_scores"][0]))
    installed, driver = home / "models" / store.model_dir(MODEL).name, store.model_dir(MODEL)
    assert sorted(p.name for p in installed.iterdir() if p.suffix == ".onnx") == sorted(
        p.name for p in driver.iterdir() if p.suffix == ".onnx"
    )
    assert (installed / "model.onnx").read_bytes() == (driver / "model.onnx").read_bytes()
    store.verify_bundle(installed, check_hashes=True)


def test_importing_the_package_does_not_import_pyspark():
    code = "import simkernel.spark, sys; assert 'pyspark' not in sys.modules; print(sorted(simkernel.spark.__all__))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "sas_udf" in out.stdout


def test_without_pyspark_the_error_names_the_extra():
    code = (
        "import sys; sys.modules['pyspark'] = None\n"  # import pyspark now fails, as where it is not installed
        "from simkernel.spark import sas_udf\n"
        "try:\n    sas_udf()\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("MissingDependencyError simkernel.spark needs the Python package 'pyspark'")
    assert out.rstrip().endswith(
        "Install it with: pip install 'simkernel[spark]' (in a source checkout: pip install -e '.[spark]')"
    )
    assert out.count("\n") == 1  # one line
