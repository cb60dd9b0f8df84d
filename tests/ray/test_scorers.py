"""``simkernel.ray``'s callable classes in real Ray Data pipelines on the two-node cluster: the README's
``read_parquet -> map_batches(SASScorer) -> write_parquet``, pandas / pyarrow / numpy batches, scores equal
to the Python API's bit for bit (and to sentence-transformers within 1e-5), rows in order with
``preserve_order``, threads sized from the actor's CPUs; importing the module does not import ray."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simkernel.components.evaluators import SASEvaluator

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PAIRS = [
    ("Paris", "The capital of France is Paris."),
    ("Berlin", "Munich"),
    ("Лев Толстой", "Толстой"),
    ("北京", "北京是中国的首都。"),
    ("a cat on a mat", "A cat was sitting on the mat."),
    ("1945", "in 1945"),
] * 5


def test_the_readme_pipeline_scores_as_the_python_api(ray_driver, tmp_path, minilm_in_store):
    ray = ray_driver
    from ray.data import DataContext

    from simkernel.ray import SASScorer

    rows = [{"id": i, "ground_truth": g, "predicted": p} for i, (g, p) in enumerate(PAIRS)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "answers.parquet", row_group_size=7)
    DataContext.get_current().execution_options.preserve_order = True
    ds = ray.data.read_parquet(str(tmp_path / "answers.parquet"), override_num_blocks=4)
    ds = ds.map_batches(
        SASScorer,
        fn_constructor_kwargs=dict(model=MODEL),
        # the README's pool of 4, on two 1-CPU nodes: one worker of 1 CPU, the other node's CPU for the read
        # and write tasks (a read task needs a whole CPU; two 0.5-CPU workers leave none on either node and
        # the pipeline waits for ever)
        compute=ray.data.ActorPoolStrategy(size=1),
        num_cpus=1,
        batch_size=8,
        batch_format="pandas",
    )
    ds.write_parquet(str(tmp_path / "scored"))
    scored = pq.read_table(tmp_path / "scored").sort_by("id")
    assert scored.column_names == ["id", "ground_truth", "predicted", "score"]
    assert scored.schema.field("score").type == pa.float32()
    expected = SASEvaluator(model=MODEL).run([g for g, _ in PAIRS], [p for _, p in PAIRS])[
        "individual_scores"
    ]
    assert scored.column("score").to_pylist() == [float(np.float32(s)) for s in expected]


def test_every_batch_format_and_every_scorer_in_one_pipeline(ray_driver, minilm_in_store, reference_embed):
    ray = ray_driver
    from ray.data import DataContext

    from simkernel.ray import Embedder, ReferenceMatchScorer, SASScorer

    DataContext.get_current().execution_options.preserve_order = True
    references = [[g, "something else entirely"] if i % 3 else [] for i, (g, _) in enumerate(PAIRS)]
    items = [{"row": i, "truth": g, "answer": p, "refs": references[i]} for i, (g, p) in enumerate(PAIRS)]
    half = dict(compute=ray.data.ActorPoolStrategy(size=1), num_cpus=0.5, batch_size=7)
    ds = (
        ray.data.from_items(items, override_num_blocks=5)
        .map_batches(
            SASScorer,
            fn_constructor_kwargs=dict(model=MODEL, ground_truth="truth", predicted="answer", output="sas"),
            batch_format="pyarrow",
            **half,
        )
        .map_batches(
            ReferenceMatchScorer,
            fn_constructor_kwargs=dict(
                model=MODEL, predicted="answer", references="refs", aggregation="mean"
            ),
            batch_format="pandas",
            **half,
        )
        .map_batches(
            Embedder,
            fn_constructor_kwargs=dict(model=MODEL, text="answer", output="vector"),
            batch_format="numpy",
            **half,
        )
    )
    out = ds.take_all()
    assert [r["row"] for r in out] == list(range(len(PAIRS)))  # input order kept
    truths, answers = [g for g, _ in PAIRS], [p for _, p in PAIRS]
    sas = SASEvaluator(model=MODEL).run(truths, answers)["individual_scores"]
    assert [r["sas"] for r in out] == [float(np.float32(s)) for s in sas]  # bit for bit

    vectors = np.stack([np.asarray(r["vector"], dtype=np.float64) for r in out])
    np.testing.assert_allclose(vectors, reference_embed(answers), atol=1e-5)  # sentence-transformers
    # eval_lib's formula on sentence-transformers' embeddings: clamped cosines, mean; 0.0 without references
    for r, refs in zip(out, references, strict=True):
        if not refs:
            assert r["score"] == 0.0
            continue
        a, b = reference_embed([r["answer"]])[0], reference_embed(refs)
        cosines = np.clip(b @ a / (np.linalg.norm(b, axis=1) * np.linalg.norm(a)), 0, 1)
        assert r["score"] == pytest.approx(cosines.mean(), abs=1e-5)


def test_an_actor_runs_onnxruntime_on_the_cpus_ray_gave_it(ray_driver, minilm_in_store):
    """Each scorer's threads: the actor's CPUs by default (1 here), the ``threads`` given when given (2 on
    the same 1-CPU actor: the value passed, not the default), read from the onnxruntime session itself."""
    ray = ray_driver

    @ray.remote(num_cpus=1)
    class Probe:
        def threads(self, threads):
            from simkernel.ray import Embedder, ReferenceMatchScorer, SASScorer

            found = []
            for scorer in (
                SASScorer(model=MODEL, threads=threads),
                ReferenceMatchScorer(model=MODEL, threads=threads),
            ):
                session = scorer.scorer.runtime_model._session
                options = session._session.get_session_options()
                found.append((scorer.threads, options.intra_op_num_threads, session.workers))
            embedder = Embedder(model=MODEL, threads=threads)
            session = embedder.encoder._session
            options = session._session.get_session_options()
            found.append((embedder.threads, options.intra_op_num_threads, session.workers))
            return found

    probe = Probe.remote()
    assert ray.get(probe.threads.remote(None)) == [(1, 1, 1)] * 3  # the actor's one CPU
    assert ray.get(probe.threads.remote(2)) == [(2, 2, 2)] * 3  # the setting, on the same 1-CPU actor
    ray.kill(probe)
    # outside Ray the same scorer takes the machine's CPUs, so the test above can tell the two apart
    from simkernel.runtime.inference.session import available_cpus

    if available_cpus() < 2:
        pytest.skip("one CPU here: the default and the actor's thread count are the same")


def test_importing_simkernel_ray_does_not_import_ray():
    code = (
        "import sys, simkernel, simkernel.ray\n"
        "from simkernel.ray import SASScorer, ReferenceMatchScorer, Embedder\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
        "print(SASScorer.__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr.decode()


def test_without_ray_the_error_names_the_extra(tmp_path):
    (tmp_path / "a.csv").write_text("ground_truth,predicted\nParis,Paris\n", encoding="utf-8")
    argv = ["score", str(tmp_path / "a.csv"), "--engine", "ray", "-o", str(tmp_path / "o.csv")]
    code = (
        "import sys; sys.modules['ray'] = None\n"  # as if ray were not installed
        "from simkernel.cli import main\n"
        f"sys.exit(main({argv!r}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300, check=False)
    err = result.stderr.decode()
    assert result.returncode == 1 and len(err.strip().splitlines()) == 1
    assert "pip install 'simkernel[ray]'" in err
    assert not (tmp_path / "o.csv").exists()


def test_the_documented_pipeline_sizes_its_pool_and_finishes_in_order(ray_driver, minilm_in_store):
    """docs/ray.md's pipeline on the 2-CPU cluster: examples/answers.csv, the pool from pool_size (1 actor
    beside the read and write tasks; the pool of 4 the README had waits for ever), rows in input order."""
    import csv
    from pathlib import Path

    ray = ray_driver
    from ray.data import ActorPoolStrategy, DataContext

    from simkernel.ray import SASScorer, pool_size

    answers = Path(__file__).resolve().parents[2] / "examples" / "answers.csv"
    DataContext.get_current().execution_options.preserve_order = True
    workers = pool_size(num_cpus=1)
    assert workers == 1  # 2 CPUs: one for the actor, one for the read and write tasks
    ds = ray.data.read_csv(str(answers), override_num_blocks=4)
    ds = ds.map_batches(
        SASScorer,
        fn_constructor_kwargs=dict(model=MODEL),
        compute=ActorPoolStrategy(size=workers),
        num_cpus=1,
        batch_size=16,
        batch_format="pandas",
    )
    rows = ds.take_all()
    with open(answers, encoding="utf-8", newline="") as handle:
        source = list(csv.DictReader(handle))
    assert [(r["ground_truth"], r["predicted"]) for r in rows] == [
        (r["ground_truth"], r["predicted"]) for r in source
    ]
    expected = SASEvaluator(model=MODEL).run(
        [r["ground_truth"] for r in source], [r["predicted"] for r in source]
    )
    assert [r["score"] for r in rows] == [float(np.float32(s)) for s in expected["individual_scores"]]


def test_a_pool_that_cannot_be_placed_is_refused_naming_the_cpus(ray_driver):
    from simkernel.ray import pool_size

    assert pool_size(num_cpus=1, size=1) == 1
    with pytest.raises(
        ValueError, match=r"an actor pool of 4 x 1 CPU needs 4 CPUs, .* the Ray cluster has 2: .* Use size=1"
    ):
        pool_size(num_cpus=1, size=4)
