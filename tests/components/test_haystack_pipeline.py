"""simkernel's evaluators inside real Haystack pipelines, next to Haystack's own components.

Covers: add_component / connect / run, Pipeline.run_async (which calls the components' run_async),
dumps() / loads() with the allowlist,
loading a pipeline saved with Haystack's evaluators (nested in SuperComponents too), Haystack's pre-init
deserialisation callbacks,
copy.deepcopy and pickle of a warmed-up pipeline (as of one holding Haystack's evaluator).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from haystack import Pipeline, SuperComponent, component
from haystack.components.evaluators import AnswerExactMatchEvaluator as HaystackEM
from haystack.components.evaluators import SASEvaluator as HaystackSAS
from haystack.core.errors import DeserializationError, PipelineError
from haystack.core.serialization import DeserializationCallbacks
from haystack.utils import ComponentDevice
from tests.copies import COPIES

from simkernel.components import (
    ALLOWED_MODULES,
    AnswerExactMatchEvaluator,
    SASEvaluator,
    use_simkernel_evaluators,
)

GROUND_TRUTHS = ["Berlin", "Paris", "Москва — столица России.", "北京是中国的首都。"]
PREDICTIONS = ["Berlin", "Lyon", "Столица России — Москва.", "中国的首都是北京。"]
ATOL = 1e-5
# simkernel's modules, plus this test module for its Answers component
ALLOWED = [*ALLOWED_MODULES, __name__]


@component
class Answers:
    """A Haystack component standing for a generator: it emits the predicted answers."""

    @component.output_types(replies=list[str])
    def run(self, replies: list[str]) -> dict:
        return {"replies": replies}


@pytest.fixture(scope="module")
def haystack_sas(minilm_checkpoint) -> HaystackSAS:
    evaluator = HaystackSAS(model=str(minilm_checkpoint), device=ComponentDevice.from_str("cpu"))
    evaluator.warm_up()
    return evaluator


def evaluation_pipeline(minilm: str, haystack_sas: HaystackSAS | None = None):
    pipe = Pipeline()
    pipe.add_component("answers", Answers())
    pipe.add_component("sas", SASEvaluator(model=minilm, device="cpu"))
    pipe.add_component("em", AnswerExactMatchEvaluator())
    pipe.add_component("haystack_em", HaystackEM())
    pipe.connect("answers.replies", "sas.predicted_answers")
    pipe.connect("answers.replies", "em.predicted_answers")
    pipe.connect("answers.replies", "haystack_em.predicted_answers")
    if haystack_sas is not None:
        pipe.add_component("haystack_sas", haystack_sas)
        pipe.connect("answers.replies", "haystack_sas.predicted_answers")
    return pipe


def pipeline_inputs(names) -> dict:
    data = {"answers": {"replies": PREDICTIONS}}
    for name in names:
        data[name] = {"ground_truth_answers": GROUND_TRUTHS}
    return data


def test_pipeline_runs_simkernel_next_to_haystack(minilm, haystack_sas):
    pipe = evaluation_pipeline(minilm, haystack_sas)
    result = pipe.run(pipeline_inputs(["sas", "em", "haystack_em", "haystack_sas"]))
    assert result["em"] == result["haystack_em"] == {"individual_scores": [1, 0, 0, 0], "score": 0.25}
    assert result["sas"].keys() == result["haystack_sas"].keys() == {"score", "individual_scores"}
    np.testing.assert_allclose(
        result["sas"]["individual_scores"], result["haystack_sas"]["individual_scores"], atol=ATOL
    )
    assert result["sas"]["score"] == pytest.approx(result["haystack_sas"]["score"], abs=ATOL)


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_warmed_up_pipeline_copies_as_one_with_haystacks_evaluator(minilm, minilm_checkpoint, how):
    copy_of = COPIES[how]
    haystack_sas = HaystackSAS(model=str(minilm_checkpoint), device=ComponentDevice.from_str("cpu"))
    pipe = evaluation_pipeline(minilm, haystack_sas)
    names = ["sas", "em", "haystack_em", "haystack_sas"]
    original = pipe.run(pipeline_inputs(names))  # warms both evaluators up
    ours = pipe.get_component("sas")

    copied = copy_of(pipe)
    theirs = copied.get_component("sas")
    assert theirs is not ours and theirs._lock is not ours._lock
    assert theirs._similarity_model is None  # the copy loads at its first run ...
    again = copied.run(pipeline_inputs(names))
    assert theirs._similarity_model is ours._similarity_model  # ... this process's shared model
    assert again["sas"]["individual_scores"] == original["sas"]["individual_scores"]
    assert again["sas"]["score"] == original["sas"]["score"]
    np.testing.assert_allclose(
        again["sas"]["individual_scores"], again["haystack_sas"]["individual_scores"], atol=ATOL
    )
    assert pipe.run(pipeline_inputs(names))["sas"] == original["sas"]  # the original is untouched


def test_sockets_are_haystacks():
    sas, haystack = SASEvaluator(), HaystackSAS()
    ours = sas.__haystack_output__._sockets_dict
    theirs = haystack.__haystack_output__._sockets_dict
    assert ours == theirs
    assert list(sas.__haystack_input__._sockets_dict) == list(haystack.__haystack_input__._sockets_dict)
    assert (
        AnswerExactMatchEvaluator().__haystack_output__._sockets_dict
        == HaystackEM().__haystack_output__._sockets_dict
    )
    assert (
        AnswerExactMatchEvaluator().__haystack_input__._sockets_dict
        == HaystackEM().__haystack_input__._sockets_dict
    )
    assert sas.__haystack_input__ is sas.__haystack_input__  # built once per instance
    assert SASEvaluator().__haystack_input__ is not sas.__haystack_input__


def test_dumps_loads_round_trip(minilm):
    pipe = evaluation_pipeline(minilm)
    text = pipe.dumps()
    assert "type: simkernel.components.evaluators.sas_evaluator.SASEvaluator" in text
    alone = Pipeline()
    alone.add_component("sas", SASEvaluator(model=minilm))
    with pytest.raises(
        DeserializationError, match="'simkernel.components.evaluators.sas_evaluator'.*allowlist"
    ):
        Pipeline.loads(alone.dumps())  # Haystack refuses modules outside its allowlist unless told
    assert (
        type(Pipeline.loads(alone.dumps(), allowed_modules=ALLOWED_MODULES).get_component("sas"))
        is SASEvaluator
    )
    loaded = Pipeline.loads(text, allowed_modules=ALLOWED)
    assert type(loaded.get_component("sas")) is SASEvaluator
    assert type(loaded.get_component("em")) is AnswerExactMatchEvaluator
    assert loaded.to_dict() == pipe.to_dict()
    first = pipe.run(pipeline_inputs(["sas", "em", "haystack_em"]))
    again = loaded.run(pipeline_inputs(["sas", "em", "haystack_em"]))
    assert first["em"] == again["em"]
    np.testing.assert_allclose(
        first["sas"]["individual_scores"], again["sas"]["individual_scores"], atol=1e-7
    )


def test_pipeline_saved_with_haystacks_evaluators_loads_with_simkernels(minilm):
    pipe = Pipeline()
    pipe.add_component("sas", HaystackSAS(model=minilm, batch_size=16))
    pipe.add_component("em", HaystackEM())
    saved = pipe.to_dict()
    with pytest.raises(DeserializationError, match="allowlist"):  # simkernel's modules must be allowed
        Pipeline.from_dict(use_simkernel_evaluators(saved))
    loaded = Pipeline.from_dict(use_simkernel_evaluators(saved), allowed_modules=ALLOWED_MODULES)
    sas = loaded.get_component("sas")
    assert type(sas) is SASEvaluator and sas._batch_size == 16 and sas._model == minilm
    assert type(loaded.get_component("em")) is AnswerExactMatchEvaluator
    assert saved["components"]["sas"]["type"] == "haystack.components.evaluators.sas_evaluator.SASEvaluator"


def test_evaluators_in_nested_pipelines_become_simkernels(minilm, haystack_sas):
    """Haystack's evaluators two SuperComponents deep load as simkernel's, and score as Haystack's does."""
    inner = Pipeline()
    inner.add_component("sas", HaystackSAS(model=minilm))
    inner.add_component("em", HaystackEM())
    middle = Pipeline()
    scores = {"sas.individual_scores": "sas_scores", "em.individual_scores": "em_scores"}
    middle.add_component("inner", SuperComponent(pipeline=inner, output_mapping=scores))
    outer = Pipeline()
    outer.add_component("middle", SuperComponent(pipeline=middle))
    outer.add_component("em", HaystackEM())
    saved = outer.to_dict()
    loaded = Pipeline.from_dict(use_simkernel_evaluators(saved), allowed_modules=ALLOWED_MODULES)
    assert saved == outer.to_dict()  # the input is left as it was

    nested = loaded.get_component("middle").pipeline.get_component("inner").pipeline
    assert type(nested.get_component("sas")) is SASEvaluator and nested.get_component("sas")._model == minilm
    assert type(nested.get_component("em")) is AnswerExactMatchEvaluator
    assert type(loaded.get_component("em")) is AnswerExactMatchEvaluator
    answers = {"ground_truth_answers": GROUND_TRUTHS, "predicted_answers": PREDICTIONS}
    result = loaded.run({"middle": answers, "em": answers})
    expected = haystack_sas.run(**answers)
    np.testing.assert_allclose(result["middle"]["sas_scores"], expected["individual_scores"], atol=ATOL)
    assert result["middle"]["em_scores"] == result["em"]["individual_scores"] == [1, 0, 0, 0]


def test_pre_init_callbacks_are_honoured(minilm):
    text = evaluation_pipeline(minilm).dumps()
    seen = []

    def pre_init(name, component_class, init_params):
        seen.append((name, component_class))
        if component_class is SASEvaluator:
            init_params["batch_size"] = 4

    loaded = Pipeline.loads(
        text, callbacks=DeserializationCallbacks(component_pre_init=pre_init), allowed_modules=ALLOWED
    )
    assert loaded.get_component("sas")._batch_size == 4
    assert ("sas", SASEvaluator) in seen and ("em", AnswerExactMatchEvaluator) in seen


def test_pipeline_run_async_uses_run_async(minilm):
    pipe = evaluation_pipeline(minilm)
    assert pipe.get_component("sas").__haystack_supports_async__ is True
    calls = []
    sas = pipe.get_component("sas")
    original = sas.run_async

    async def spy(**kwargs):
        calls.append(kwargs)
        return await original(**kwargs)

    sas.run_async = spy
    result = asyncio.run(pipe.run_async(pipeline_inputs(["sas", "em", "haystack_em"])))
    assert len(calls) == 1
    sync = SASEvaluator(model=minilm).run(GROUND_TRUTHS, PREDICTIONS)
    assert result["sas"]["individual_scores"] == sync["individual_scores"]  # run_async: run's bits
    assert pipe.get_component("em").__haystack_supports_async__ is True
    assert result["em"] == AnswerExactMatchEvaluator().run(GROUND_TRUTHS, PREDICTIONS)


def test_component_cannot_join_two_pipelines():
    evaluator = SASEvaluator()
    Pipeline().add_component("sas", evaluator)
    with pytest.raises(PipelineError, match="already been added in another Pipeline"):
        Pipeline().add_component("sas", evaluator)


def test_several_ground_truths_through_a_pipeline_connection(minilm):
    @component
    class References:
        @component.output_types(references=list[list[str]])
        def run(self, references: list[list[str]]) -> dict:
            return {"references": references}

    pipe = Pipeline()
    pipe.add_component("references", References())
    pipe.add_component("sas", SASEvaluator(model=minilm))
    pipe.connect("references.references", "sas.ground_truth_answers")
    result = pipe.run(
        {"references": {"references": [["Paris", "Lyon"]]}, "sas": {"predicted_answers": ["Lyon"]}}
    )
    assert result["sas"]["individual_scores"][0] == pytest.approx(1.0, abs=ATOL)
