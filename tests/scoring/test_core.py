"""The scoring core itself: settings checked once with the messages every entry point used to write out,
the registry's lookups and errors, each constant defined once in the package, and the batch scorers of
the built-in metrics equal, bit for bit, to the drop-in clones they share their formulas with."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from simkernel.scoring import Metric, ScoringSettings, get_metric, metric_names, register_metric, registry

SRC = Path(__file__).resolve().parents[2] / "src" / "simkernel"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"precision": "fp16"}, "precision must be one of ('fp32', 'int8', 'bf16'), got 'fp16'"),
        ({"threads": 0}, "threads must be None or a positive integer, got 0"),
        ({"threads": True}, "threads must be None or a positive integer, got True"),
        ({"batch_size": -1}, "batch_size must be a positive integer, got -1"),
        ({"aggregation": "sum"}, "aggregation must be 'max' or 'mean', got 'sum'"),
        ({"model": ""}, "model must be a model id or a path (a non-empty string), got ''"),
    ],
)
def test_bad_settings_are_named(given, message):
    with pytest.raises(ValueError) as caught:
        ScoringSettings(**given)
    assert str(caught.value) == message


def test_unset_options_take_the_defaults_and_misspelt_ones_are_refused():
    settings = ScoringSettings.from_options(model=None, precision="int8", threads=None)
    assert (settings.model, settings.precision, settings.batch_size) == (
        "sentence-transformers/all-MiniLM-L6-v2",
        "int8",
        32,
    )
    with pytest.raises(TypeError, match=r"unknown scoring setting\(s\) \['precison'\]"):
        ScoringSettings.from_options(precison="int8")


def test_the_registry_names_its_metrics_and_refuses_a_taken_name():
    assert metric_names()[:3] == ["sas", "reference", "exact"]
    with pytest.raises(ValueError, match="unknown metric 'bleu'; choose one of: sas, reference, exact"):
        get_metric("bleu")
    sas = get_metric("sas")
    assert (sas.target, sas.score_type, sas.loads_model, sas.several_targets) == (
        "ground_truth",
        "float32",
        True,
        True,
    )
    assert get_metric("reference").default_threshold == 0.7
    assert get_metric("exact").local_only and not get_metric("exact").loads_model
    with pytest.raises(ValueError, match="a metric named 'sas' is already registered"):
        register_metric(sas)
    with pytest.raises(TypeError, match="register_metric takes a simkernel.scoring.Metric"):
        register_metric("sas")  # type: ignore[arg-type]


def test_a_metric_registered_in_process_is_found_and_can_be_removed():
    scorer = type(
        "Half",
        (),
        {
            "__init__": lambda self, s: None,
            "load": lambda self: None,
            "score": lambda self, p, t: [0.5] * len(p),
            "description": "half",
            "notes": [],
        },
    )
    metric = Metric("half", "ground_truth", frozenset(), "float64", scorer, "test only")
    register_metric(metric)
    try:
        assert get_metric("half") is metric and "half" in metric_names()
        assert metric.scorer().score(["a", "b"], ["c", "d"]) == [0.5, 0.5]
    finally:
        registry._registered.pop("half")
    with pytest.raises(ValueError, match="a metric's target must be one of"):
        Metric("bad", "labels", frozenset(), "float64", scorer, "test only")


def _assigned_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


@pytest.mark.parametrize(
    ("constant", "home"),
    [
        ("DEFAULT_MODEL", "runtime/acquisition/registry.py"),
        ("PRECISIONS", "runtime/store/layout.py"),  # the graph file map; scoring's tuple derives from it
        ("AGGREGATIONS", "scoring/settings.py"),
        ("DEFAULT_BATCH_SIZE", "scoring/settings.py"),
        ("DEFAULT_PRECISION", "scoring/settings.py"),
        ("DEFAULT_CHUNK_ROWS", "batch/job.py"),
    ],
)
def test_each_constant_is_defined_once_in_the_package(constant, home):
    defined = sorted(
        p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py") if constant in _assigned_names(p)
    )
    allowed = {home, "scoring/settings.py"} if constant == "PRECISIONS" else {home}
    assert set(defined) <= allowed and home in defined, f"{constant} is defined in {defined}"


TEXTS = ["Paris", "Москва — столица России.", "北京是中国的首都。", "the same words", "🙂"]
TRUTHS = ["It is Paris.", "Столица — Москва.", "首都是北京。", "the same words", "a smile"]


def test_the_sas_scorer_equals_the_sas_evaluator_bit_for_bit():
    from simkernel.components.evaluators import SASEvaluator
    from simkernel.runtime import get_text_encoder

    model = "sentence-transformers/all-MiniLM-L6-v2"
    evaluator = SASEvaluator(model=model)
    several = [[t, "something else"] if i % 2 else t for i, t in enumerate(TRUTHS)]
    for truths in (TRUTHS, several):
        expected = evaluator.run(ground_truth_answers=truths, predicted_answers=TEXTS)["individual_scores"]
        got = get_metric("sas").scorer(ScoringSettings(model=model, batch_size=2)).score(TEXTS, truths)
        assert got == expected
        # and against float64 numpy on the same encoder's vectors (the max over a row's ground truths)
        encoder = get_text_encoder(model)
        for text, truth, score in zip(TEXTS, truths, got, strict=True):
            group = [truth] if isinstance(truth, str) else truth
            vectors = encoder.encode([text, *group]).astype(np.float64)
            cos = vectors[1:] @ vectors[0] / np.linalg.norm(vectors[1:], axis=1) / np.linalg.norm(vectors[0])
            assert score == pytest.approx(float(cos.max()), abs=1e-6)
    assert len(set(got)) == len(got)


def test_the_reference_scorer_equals_the_metric_and_float64_numpy():
    from simkernel.metrics import ReferenceMatchMetric
    from simkernel.runtime import get_text_encoder

    refs = [[t, p[:2]] for t, p in zip(TRUTHS, TEXTS, strict=True)] + [[]]
    predicted = [*TEXTS, "no references"]
    scorer = get_metric("reference").scorer(ScoringSettings(aggregation="mean"))
    got = scorer.score(predicted, refs)
    encoder = get_text_encoder("sentence-transformers/all-MiniLM-L6-v2")
    for text, group, score in zip(predicted, refs, got, strict=True):
        if not group:
            assert score == 0.0
            continue
        vectors = encoder.encode([text, *group]).astype(np.float64)
        cos = vectors[1:] @ vectors[0] / np.linalg.norm(vectors[1:], axis=1) / np.linalg.norm(vectors[0])
        assert score == pytest.approx(float(np.clip(cos, 0, 1).mean()), abs=1e-6)
        import asyncio

        metric = ReferenceMatchMetric(
            references=group, aggregation="mean", threshold=0.5, embedding_provider="local"
        )
        case = type("Case", (), {"actual_output": text})()
        assert asyncio.run(metric.evaluate(case))["score"] == score
