"""SASEvaluator's ``threads``, ``batch_size`` and ``precision`` at work (beyond ``to_dict``): what onnxruntime
receives (``onnx_sessions``, tests/conftest.py) and that the scores stay Haystack's (the fixture written by
the real Haystack SASEvaluator, tests/data/fixtures/haystack_sas_minilm.json)."""

from __future__ import annotations

import pytest

from simkernel.components.evaluators import SASEvaluator

ATOL = 1e-5


@pytest.mark.parametrize("threads", [1, 3])
def test_threads_and_batch_size_reach_onnxruntime_with_haystacks_scores(
    minilm, onnx_sessions, haystack_fixture, threads
):
    triples = haystack_fixture["triples"]
    evaluator = SASEvaluator(model=minilm, batch_size=7, threads=threads)
    result = evaluator.run(
        ground_truth_answers=[t["ground_truth"] for t in triples],
        predicted_answers=[t["predicted"] for t in triples],
    )
    assert result["individual_scores"] == pytest.approx([t["individual_score"] for t in triples], abs=ATOL)
    main, *twins = onnx_sessions
    assert (main.graph, main.intra_op_threads) == ("model.onnx", threads)
    # with several threads the batches run data-parallel on single-threaded twins of the session
    assert [(t.graph, t.intra_op_threads) for t in twins] == ([] if threads == 1 else [("model.onnx", 1)])
    batches = [b for s in onnx_sessions for b in s.batches]
    distinct = {t[k] for t in triples for k in ("ground_truth", "predicted")}
    assert max(batches) == 7 and sum(batches) == len(distinct)


def test_int8_runs_the_int8_graph(minilm_int8, onnx_sessions, haystack_fixture):
    triples = haystack_fixture["triples"][:10]
    evaluator = SASEvaluator(model=minilm_int8, precision="int8", threads=1)
    scores = evaluator.run(
        ground_truth_answers=[t["ground_truth"] for t in triples],
        predicted_answers=[t["predicted"] for t in triples],
    )["individual_scores"]
    assert [(s.graph, s.intra_op_threads) for s in onnx_sessions] == [("model_int8.onnx", 1)]
    differences = [abs(s - t["individual_score"]) for s, t in zip(scores, triples, strict=True)]
    assert max(differences) > ATOL  # not the fp32 graph's numbers
