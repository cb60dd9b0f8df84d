"""ReferenceMatchMetric and SemanticSimilarityMetric on the local provider against eval_lib's formula
on sentence-transformers embeddings of the same checkpoint (Russian, Chinese, English, edge cases),
plus the numerics the formula specifies (zero vectors, clamping, aggregation) on exact vectors."""

from __future__ import annotations

import asyncio

import pytest
from metrics_support import eval_lib_formula

from simkernel import EvalTestCase, ReferenceMatchMetric, SemanticSimilarityMetric
from simkernel.metrics import EmbeddingProvider

RU_REFS = [
    "Для сброса пароля нажмите «Забыли пароль?» на странице входа.",
    "Пароль можно восстановить через ссылку в письме.",
    "Наша компания была основана в 2020 году в Сан-Франциско.",
]
ZH_REFS = ["北京是中华人民共和国的首都。", "中国的首都是北京。", "香蕉富含钾。"]
CASES = [
    ("ru", "Перейдите в Настройки > Безопасность, чтобы сбросить пароль.", RU_REFS),
    ("zh", "北京是中国的首都，也是政治中心。", ZH_REFS),
    (
        "mixed",
        "The capital of China is Beijing.",
        [*ZH_REFS, "Beijing is the capital of China.", "Пекин — столица Китая."],
    ),
    ("empty_output", "", ["Reset your password from the login page.", ""]),
    (
        "long",
        "The quick brown fox jumps over the lazy dog. " * 60,
        ["A fox jumps over a dog.", "Cats sleep all day."],
    ),
]


class FixedVectors(EmbeddingProvider):
    """A provider returning given vectors by text (exact inputs for the numerics)."""

    model_name = "fixed"

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.calls: list[list[str]] = []

    async def embed(self, texts):
        self.calls.append(list(texts))
        return [self.vectors[t] for t in texts], 0.0


@pytest.mark.parametrize("aggregation", ["max", "mean"])
@pytest.mark.parametrize(("label", "output", "refs"), CASES, ids=[c[0] for c in CASES])
def test_reference_match_vs_sentence_transformers(
    label, output, refs, aggregation, st_model, default_model_ready
):
    want_score, want_sims = eval_lib_formula(st_model.encode([output, *refs]), aggregation)
    metric = ReferenceMatchMetric(references=refs, aggregation=aggregation, embedding_provider="local")
    result = asyncio.run(metric.evaluate(EvalTestCase(input="q", actual_output=output)))

    assert result["score"] == pytest.approx(want_score, abs=1e-5)
    assert result["evaluation_log"]["similarities"] == [round(s, 4) for s in want_sims]
    assert (
        result["reason"] == f"Reference match ({aggregation}): {want_score:.4f} across {len(refs)} references"
    )
    assert result["success"] is (want_score >= 0.7)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Москва — столица России.", "Столица России — Москва."),
        ("北京是中国的首都。", "中国的首都是北京。"),
        ("Paris", None),
        ("Berlin", "Lyon"),
    ],
)
def test_semantic_similarity_vs_sentence_transformers(output, expected, st_model, default_model_ready):
    want, _ = eval_lib_formula(st_model.encode([output, expected or ""]), "max")
    metric = SemanticSimilarityMetric(threshold=0.5, embedding_provider="local")
    result = asyncio.run(
        metric.evaluate(EvalTestCase(input="q", actual_output=output, expected_output=expected))
    )

    assert list(result) == ["name", "score", "success", "reason", "evaluation_cost", "evaluation_log"]
    assert result["name"] == "semanticSimilarityMetric"
    assert result["score"] == pytest.approx(want, abs=1e-5)
    assert result["success"] is (want >= 0.5)
    assert result["reason"] == f"Semantic similarity: {want:.4f} (threshold: 0.5)"
    assert result["evaluation_log"] == {
        "cosine_similarity": result["score"],
        "embedding_cost": 0.0,
        "actual_length": len(output),
        "expected_length": len(expected or ""),
    }


def test_negative_cosine_is_clamped_and_zero_vector_scores_zero():
    provider = FixedVectors(
        {"a": [1.0, 0.0], "opposite": [-1.0, 0.0], "zero": [0.0, 0.0], "near": [0.6, 0.8]}
    )
    metric = ReferenceMatchMetric(
        references=["opposite", "zero", "near"], aggregation="mean", embedding_provider=provider
    )
    result = asyncio.run(metric.evaluate(EvalTestCase(input="q", actual_output="a")))
    assert provider.calls == [["a", "opposite", "zero", "near"]]  # one call over [output] + references
    assert result["evaluation_log"]["similarities"] == [0.0, 0.0, 0.6]
    assert result["score"] == pytest.approx(0.2, abs=1e-7)

    zero_output = asyncio.run(metric.evaluate(EvalTestCase(input="q", actual_output="zero")))
    assert zero_output["score"] == 0.0
    assert zero_output["evaluation_log"]["similarities"] == [0.0, 0.0, 0.0]


def test_max_is_the_best_reference_and_threshold_is_inclusive():
    provider = FixedVectors({"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]})
    metric = ReferenceMatchMetric(threshold=0.5, references=["b", "c"], embedding_provider=provider)
    result = asyncio.run(metric.evaluate(EvalTestCase(input="q", actual_output="a")))
    assert result["score"] == pytest.approx(2**-0.5, abs=1e-7)
    assert result["success"] is True
    at_threshold = ReferenceMatchMetric(threshold=0.0, references=["b"], embedding_provider=provider)
    assert asyncio.run(at_threshold.evaluate(EvalTestCase(input="q", actual_output="a")))["success"] is True


def test_other_aggregation_warns_and_takes_the_mean(default_model_ready):
    refs = ["Paris is the capital of France.", "Bananas are rich in potassium."]
    case = EvalTestCase(input="q", actual_output="France's capital is Paris.")
    with pytest.warns(UserWarning, match="'MAX' is neither 'max' nor 'mean'; it is treated as 'mean'"):
        odd = ReferenceMatchMetric(references=refs, aggregation="MAX", embedding_provider="local")
    mean = ReferenceMatchMetric(references=refs, aggregation="mean", embedding_provider="local")
    odd_result = asyncio.run(odd.evaluate(case))
    mean_result = asyncio.run(mean.evaluate(case))
    assert odd_result["score"] == mean_result["score"]
    assert odd_result["reason"].startswith("Reference match (MAX): ")
    assert odd_result["evaluation_log"]["aggregation"] == "MAX"


def test_max_and_mean_do_not_warn(recwarn):
    ReferenceMatchMetric(aggregation="max", embedding_provider="local")
    ReferenceMatchMetric(aggregation="mean", embedding_provider="local")
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("references", [None, []])
def test_no_references_result_without_embedding(references):
    provider = FixedVectors({})
    metric = ReferenceMatchMetric(references=references, embedding_provider=provider)
    result = asyncio.run(metric.evaluate(EvalTestCase(input="q", actual_output="anything")))
    assert result == {
        "name": "referenceMatchMetric",
        "score": 0.0,
        "success": False,
        "reason": "No reference texts provided.",
        "evaluation_cost": 0.0,
        "evaluation_log": {"error": "No references"},
    }
    assert provider.calls == []
    assert metric.references == []


def test_constructor_defaults_and_attributes():
    metric = ReferenceMatchMetric()
    assert (metric.threshold, metric.references, metric.aggregation, metric.verbose) == (
        0.7,
        [],
        "max",
        False,
    )
    assert metric.name == "referenceMatchMetric" and metric.model is None
    assert type(metric.provider).__name__ == "OpenAIEmbeddingProvider"
    assert metric.provider.model_name == "text-embedding-3-small"
    local = ReferenceMatchMetric(embedding_provider="local")
    assert local.provider.model_name == "all-MiniLM-L6-v2"
    assert local.provider.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    semantic = SemanticSimilarityMetric()
    assert (semantic.threshold, semantic.verbose, semantic.name) == (0.7, False, "semanticSimilarityMetric")


def test_references_are_copied():
    refs = ["a", "b"]
    metric = ReferenceMatchMetric(references=refs)
    refs.append(3)
    assert metric.references == ["a", "b"]
    assert ReferenceMatchMetric(references=("x", "y")).references == ["x", "y"]


def test_many_instances_share_one_loaded_model(default_model_ready):
    metrics = [ReferenceMatchMetric(references=["x"], embedding_provider="local") for _ in range(5)]
    metrics.append(SemanticSimilarityMetric(embedding_provider="local", model_name="all-MiniLM-L6-v2"))
    encoders = {id(m.provider.encoder) for m in metrics}
    assert len(encoders) == 1
