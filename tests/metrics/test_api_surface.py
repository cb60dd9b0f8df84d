"""Import spellings, import cost, console output (verbose) and every bad input of the metrics API."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pydantic
import pytest

import simkernel
from simkernel import EvalTestCase, ReferenceMatchMetric, SemanticSimilarityMetric, evaluate


def test_three_spellings_are_the_same_classes():
    from simkernel.metrics.vector_metrics import ReferenceMatchMetric as documented
    from simkernel.metrics.vector_metrics import SemanticSimilarityMetric as documented_semantic
    from simkernel.vector_metrics import ReferenceMatchMetric as installed
    from simkernel.vector_metrics import SemanticSimilarityMetric as installed_semantic

    assert documented is installed is simkernel.ReferenceMatchMetric is ReferenceMatchMetric
    assert documented_semantic is installed_semantic is simkernel.SemanticSimilarityMetric
    from simkernel.metrics import EvalTestCase as from_metrics
    from simkernel.metrics import evaluate as evaluate_from_metrics

    assert from_metrics is simkernel.EvalTestCase and evaluate_from_metrics is simkernel.evaluate


def test_import_and_construction_load_nothing_heavy():
    code = (
        "import sys, simkernel\n"
        "from simkernel.metrics.vector_metrics import ReferenceMatchMetric\n"
        "from simkernel import evaluate\n"
        "m = ReferenceMatchMetric(references=['a'], embedding_provider='local')\n"
        "heavy = [n for n in ('torch', 'transformers', 'sentence_transformers', 'haystack', 'onnxruntime', "
        "'tokenizers', 'pydantic') if n in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_missing_fields_raise_pydantic_validation_error_like_eval_lib():
    with pytest.raises(pydantic.ValidationError) as info:
        EvalTestCase(actual_output="Paris")  # the seed's example: no input
    assert info.value.errors()[0]["loc"] == ("input",) and info.value.errors()[0]["type"] == "missing"
    with pytest.raises(pydantic.ValidationError) as info:
        EvalTestCase(input="q")
    assert info.value.errors()[0]["loc"] == ("actual_output",)
    with pytest.raises(pydantic.ValidationError):
        EvalTestCase(input="q", actual_output=3)


def test_test_case_fields():
    case = EvalTestCase(
        input="q",
        actual_output="a",
        expected_output="e",
        retrieval_context=["c"],
        tools_called=["t"],
        expected_tools=["t"],
        reasoning="r",
        name="n",
        perturbation_group="g",
        planning_steps=["s"],
        execution_trace=[{"type": "tool_call", "name": "search"}],
        agent_confidence=0.5,
        resource_usage={"total_tokens": 10},
        extra_fields={"tags": ["x"]},
    )
    assert case.execution_trace[0].name == "search" and case.resource_usage.total_tokens == 10
    assert case.model_dump()["extra_fields"] == {"tags": ["x"]}


def test_references_as_a_string_is_a_type_error():
    with pytest.raises(
        TypeError, match=r"references must be a list of strings, got a single str .*references=\["
    ):
        ReferenceMatchMetric(references="Paris is the capital of France.")


@pytest.mark.parametrize(("refs", "index"), [(["ok", 3], 1), ([None], 0), (["a", "b", b"bytes"], 2)])
def test_non_string_reference_is_a_value_error_naming_the_index(refs, index):
    with pytest.raises(ValueError, match=rf"references\[{index}\] must be a string"):
        ReferenceMatchMetric(references=refs)


def test_references_of_another_type():
    with pytest.raises(TypeError, match="references must be a list of strings, got int"):
        ReferenceMatchMetric(references=5)


@pytest.mark.parametrize("provider", ["cohere", "OpenAI", "", None])
def test_unknown_provider_has_eval_libs_message(provider):
    with pytest.raises(ValueError) as info:
        ReferenceMatchMetric(embedding_provider=provider)
    assert str(info.value) == f"Unknown embedding provider: {provider}. Use 'openai' or 'local'."
    with pytest.raises(ValueError, match="Unknown embedding provider"):
        SemanticSimilarityMetric(embedding_provider=provider)


@pytest.mark.parametrize("threshold", ["0.7", None, True])
def test_threshold_must_be_a_number(threshold):
    with pytest.raises(TypeError, match="threshold must be a number"):
        ReferenceMatchMetric(threshold=threshold)
    with pytest.raises(ValueError, match="NaN"):
        SemanticSimilarityMetric(threshold=float("nan"))


def test_bad_test_case_objects():
    metric = ReferenceMatchMetric(references=["a"], embedding_provider="local")
    with pytest.raises(TypeError, match=r"test_cases\[1\] must be an EvalTestCase.*got dict"):
        asyncio.run(
            evaluate(
                [EvalTestCase(input="q", actual_output="a"), {"input": "q", "actual_output": "a"}], [metric]
            )
        )
    with pytest.raises(TypeError, match=r"test_cases must be a list.*evaluate\(\[test_case\], \[metric\]\)"):
        asyncio.run(evaluate(EvalTestCase(input="q", actual_output="a"), [metric]))
    with pytest.raises(TypeError, match=r"metrics must be a list"):
        asyncio.run(evaluate([EvalTestCase(input="q", actual_output="a")], metric))
    with pytest.raises(TypeError, match=r"metrics\[0\] is a type without"):
        asyncio.run(evaluate([EvalTestCase(input="q", actual_output="a")], [ReferenceMatchMetric]))
    with pytest.raises(TypeError, match=r"test case must be an EvalTestCase.*got str"):
        asyncio.run(metric.evaluate("just a string"))
    bad = EvalTestCase.model_construct(input="q", actual_output=42)
    with pytest.raises(
        TypeError, match=r"test_cases\[0\]: test_case.actual_output must be a string, got int"
    ):
        asyncio.run(evaluate([bad], [metric], verbose=False))


def test_mutated_references_are_checked_at_evaluation(default_model_ready):
    metric = ReferenceMatchMetric(references=["a"], embedding_provider="local")
    metric.references.append(7)
    with pytest.raises(ValueError, match=r"references\[1\] must be a string"):
        asyncio.run(metric.evaluate(EvalTestCase(input="q", actual_output="a")))


def test_verbose_false_prints_nothing(capsys, default_model_ready):
    case = EvalTestCase(input="q", actual_output="Paris")
    metric = ReferenceMatchMetric(references=["Paris"], embedding_provider="local")  # verbose=False
    asyncio.run(metric.evaluate(case))
    asyncio.run(evaluate([case], [metric, ReferenceMatchMetric(embedding_provider="local")], verbose=False))
    assert capsys.readouterr() == ("", "")


def test_verbose_true_prints_eval_libs_layout_and_restores_the_flag(capsys, default_model_ready):
    case = EvalTestCase(input="Как сбросить пароль?", actual_output="Нажмите «Забыли пароль?».")
    metric = ReferenceMatchMetric(references=["Нажмите «Забыли пароль?»."], embedding_provider="local")
    asyncio.run(evaluate([case], [metric]))  # verbose=True is evaluate's default
    out = capsys.readouterr().out
    for text in (
        "STARTING EVALUATION",
        "Test Case 1/1",
        "Input: Как сбросить пароль?",
        "referenceMatchMetric",
        "PASSED",
        "Reference match (max): 1.0000 across 1 references",
        "Evaluation Log:",
        "EVALUATION SUMMARY",
        "Passed: \x1b[92m1",
    ):
        assert text in out
    assert metric.verbose is False

    metric.verbose = True
    asyncio.run(metric.evaluate(case))
    assert "Reference match (max)" in capsys.readouterr().out


def test_any_object_with_the_fields_is_a_test_case(default_model_ready):
    """eval_lib's own EvalTestCase (or any object with the attributes) works: nothing checks the class."""
    from types import SimpleNamespace

    case = SimpleNamespace(
        input="q",
        actual_output="Paris",
        expected_output=None,
        retrieval_context=None,
        tools_called=None,
        expected_tools=None,
    )
    metric = ReferenceMatchMetric(references=["Paris"], embedding_provider="local")
    [(_, [result])] = asyncio.run(evaluate([case], [metric], verbose=False))
    assert result.input == "q" and result.metrics_data[0].reason.startswith("Reference match (max): ")
