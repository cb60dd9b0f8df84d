"""SASEvaluator(precision="bf16"): refused at construction on a CPU without native bf16 (checked on every
CPU: one with bf16 is seen as one without, ``cpu_without_bf16``); elsewhere (and anywhere with the bf16
path computing in f32: the ``simulated_bf16`` fixture) it scores through OpenVINO, and in f32 must give
Haystack's scores on the shared fixture within the fp32 tolerance."""

from __future__ import annotations

import pytest
from tests.runtime.inference.bf16_cpu import simulate_cpu_without_bf16

from simkernel.components.evaluators import SASEvaluator
from simkernel.errors import PrecisionUnavailableError


def test_refused_at_construction_naming_what_the_cpu_lacks(minilm, monkeypatch):
    reason = simulate_cpu_without_bf16(monkeypatch)
    with pytest.raises(PrecisionUnavailableError) as info:
        SASEvaluator(model=minilm, precision="bf16")
    message = str(info.value)
    assert "precision='bf16' is not available" in message and reason in message
    assert "precision='int8'" in message and "precision='fp32'" in message


def test_bf16_path_gives_haystacks_fixture_scores(minilm, haystack_fixture, simulated_bf16):
    from simkernel.runtime.inference.openvino_session import OpenVinoEncoderSession

    evaluator = SASEvaluator(model=minilm, precision="bf16", threads=2)
    evaluator.warm_up()
    assert isinstance(evaluator._similarity_model._session, OpenVinoEncoderSession)
    triples = haystack_fixture["triples"]
    result = evaluator.run(
        ground_truth_answers=[t["ground_truth"] for t in triples],
        predicted_answers=[t["predicted"] for t in triples],
    )
    for t, score in zip(triples, result["individual_scores"], strict=True):
        assert score == pytest.approx(t["individual_score"], abs=1e-5), t["category"]
    assert result["score"] == pytest.approx(haystack_fixture["batched_run_score"], abs=1e-5)


def test_bf16_survives_serialisation(minilm, simulated_bf16):
    data = SASEvaluator(model=minilm, precision="bf16").to_dict()
    assert data["init_parameters"]["precision"] == "bf16"
    assert SASEvaluator.from_dict(data)._precision == "bf16"
