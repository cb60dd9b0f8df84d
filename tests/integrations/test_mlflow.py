"""SimkernelSimilarityScorer in the real mlflow.genai.evaluate, semantic_similarity_metric in the real
mlflow.evaluate, both against the cosine of sentence-transformers' vectors on the same checkpoint."""

from __future__ import annotations

import os

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.entities import Feedback
from mlflow.genai.scorers import Scorer

from simkernel.calibration.thresholds import calibrated_threshold
from simkernel.integrations.mlflow import SimkernelSimilarityScorer, semantic_similarity_metric

ATOL = 1e-5

ROWS = [
    (
        "Which city is the capital of France?",
        "Paris is the capital of France.",
        "The capital of France is Paris.",
    ),
    ("Who wrote War and Peace?", "Leo Tolstoy wrote it.", "War and Peace is a novel by Leo Tolstoy."),
    ("What do plants make from light?", "Bananas are yellow.", "Plants turn light into chemical energy."),
    ("What is two plus two?", "Four.", "Two plus two equals four."),
    # non-English rows: all-MiniLM-L6-v2 is an English model, so these test that the texts go through
    # MLflow and the scorer intact, with sentence-transformers' numbers, not the model's quality on them
    ("Какой город — столица России?", "Москва — столица России.", "Столица России — Москва."),
    ("中国的首都是哪座城市？", "北京是中国的首都。", "中国的首都是北京。"),
]


@pytest.fixture(scope="module")
def tracking(tmp_path_factory):
    """A tracking store and artifact folder of its own (sqlite, MLflow's default backend), telemetry off;
    restored after."""
    saved = {k: os.environ.get(k) for k in ("MLFLOW_DISABLE_TELEMETRY", "MLFLOW_TRACKING_URI")}
    os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    # the artifacts too (the sqlite store's default artifact root is ./mlruns, in the checkout)
    experiment = mlflow.create_experiment(
        "simkernel-tests", artifact_location=(folder / "artifacts").as_uri()
    )
    mlflow.set_experiment(experiment_id=experiment)
    yield uri
    mlflow.set_tracking_uri(None)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def reference(st_model) -> np.ndarray:
    """sentence-transformers' cosine of each row's output and expected response."""
    outputs = st_model.encode([r[1] for r in ROWS], normalize_embeddings=True)
    expected = st_model.encode([r[2] for r in ROWS], normalize_embeddings=True)
    return (outputs.astype(np.float64) * expected).sum(axis=1)


@pytest.fixture(scope="module")
def scorer(minilm):
    return SimkernelSimilarityScorer(model=minilm, threads=2, threshold=0.7)


def data() -> list[dict]:
    return [
        {"inputs": {"question": q}, "outputs": o, "expectations": {"expected_response": e}}
        for q, o, e in ROWS
    ]


def test_is_an_mlflow_scorer_returning_feedback(scorer, reference):
    assert isinstance(scorer, Scorer) and scorer.name == "semantic_similarity"
    feedback = scorer(outputs=ROWS[0][1], expectations={"expected_response": ROWS[0][2]})
    assert isinstance(feedback, Feedback) and feedback.name == "semantic_similarity"
    assert feedback.value == pytest.approx(reference[0], abs=ATOL)
    assert f"{feedback.value:.4f}" in feedback.rationale and "threshold 0.7000" in feedback.rationale
    assert feedback.rationale.endswith(": pass") and feedback.metadata["passed"] == "true"
    low = scorer(outputs=ROWS[2][1], expectations={"expected_response": ROWS[2][2]})
    assert low.value == pytest.approx(reference[2], abs=ATOL) and low.value < 0.7
    assert low.rationale.endswith(": fail") and low.metadata["passed"] == "false"


def test_genai_evaluate_runs_the_scorer(tracking, scorer, reference):
    result = mlflow.genai.evaluate(data=data(), scorers=[scorer])
    table = result.result_df
    values = table.set_index(table["request"].map(lambda r: r["question"]))["semantic_similarity/value"]
    got = np.array([values[q] for q, _, _ in ROWS], dtype=np.float64)
    np.testing.assert_allclose(got, reference, atol=ATOL)
    assert result.metrics["semantic_similarity/mean"] == pytest.approx(reference.mean(), abs=ATOL)
    rationales = table["semantic_similarity/rationale"].tolist()
    assert sum(r.endswith(": pass") for r in rationales) == int((reference >= 0.7).sum())
    # the Russian and Chinese rows come back whole, matched to their question (nothing re-encoded or lost)
    responses = dict(zip(table["request"].map(lambda r: r["question"]), table["response"], strict=True))
    assert {q: responses[q] for q, _, _ in ROWS[-2:]} == {q: o for q, o, _ in ROWS[-2:]}


def test_pass_if_is_score_at_least_threshold(scorer):
    assert scorer.pass_if(0.7) and scorer.pass_if(0.9) and not scorer.pass_if(0.69)


def test_calibrated_threshold_is_the_registry_one(minilm):
    expected = calibrated_threshold(minilm, "int8")
    calibrated = SimkernelSimilarityScorer(model=minilm, precision="int8", threshold="calibrated")
    assert calibrated.threshold == expected.value and calibrated.threshold_source == expected.source
    feedback = calibrated(outputs="Paris.", expectations={"expected_response": "Paris is the capital."})
    assert f"threshold {expected.value:.4f} ({expected.source})" in feedback.rationale
    with pytest.raises(ValueError, match="no calibrated threshold"):
        SimkernelSimilarityScorer(model="simkernel-test/minilm-l6-cross-encoder", threshold="calibrated")
    with pytest.raises(ValueError, match="neither a number nor 'calibrated'"):
        SimkernelSimilarityScorer(threshold="high")


def test_a_row_without_expected_response_names_the_fix(scorer):
    with pytest.raises(ValueError, match=r"expectations=\{'expected_response'"):
        scorer(outputs="Paris.", expectations={"expected_facts": ["Paris"]})
    with pytest.raises(TypeError, match="outputs must be the response text"):
        scorer(outputs={"text": "Paris."}, expectations={"expected_response": "Paris."})


def test_one_encoder_call_per_row(scorer, monkeypatch):
    calls = []
    encoder = scorer.encoder
    encode = encoder.encode
    monkeypatch.setattr(encoder, "encode", lambda t, **kw: calls.append(list(t)) or encode(t, **kw))
    scorer(outputs="one answer", expectations={"expected_response": "the reference"})
    assert calls == [["one answer", "the reference"]]


def test_classic_evaluate_metric(tracking, minilm, reference, monkeypatch):
    metric = semantic_similarity_metric(model=minilm, threads=2, threshold=0.7)
    frame = pd.DataFrame({"predictions": [r[1] for r in ROWS], "targets": [r[2] for r in ROWS]})
    from simkernel.runtime import get_text_encoder

    encoder = get_text_encoder(minilm, threads=2)
    calls = []
    encode = encoder.encode
    monkeypatch.setattr(encoder, "encode", lambda t, **kw: calls.append(len(t)) or encode(t, **kw))
    with mlflow.start_run():
        result = mlflow.evaluate(
            data=frame,
            predictions="predictions",
            targets="targets",
            extra_metrics=[metric],
            evaluators="default",
        )
    # mlflow.evaluate first tries the metric on the first row, then runs it on all: one encoder call each
    assert calls == [2, 2 * len(ROWS)]
    assert result.metrics["semantic_similarity/v1/mean"] == pytest.approx(reference.mean(), abs=ATOL)
    assert result.metrics["semantic_similarity/v1/pass_rate"] == pytest.approx((reference >= 0.7).mean())
    table = result.tables["eval_results_table"]
    np.testing.assert_allclose(table["semantic_similarity/v1/score"].to_numpy(float), reference, atol=ATOL)


def test_bad_settings_are_refused_at_construction():
    with pytest.raises(ValueError, match="precision"):
        SimkernelSimilarityScorer(precision="fp16")
    with pytest.raises(ValueError, match="threads"):
        semantic_similarity_metric(threads=0)
