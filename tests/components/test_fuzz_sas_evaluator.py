"""Fuzzing ``SASEvaluator.run`` (hypothesis, 600 cases per run) on the default model.

Ground truths may be texts or lists of texts, predictions texts; either may hold non-str values, lone
surrogates, empty lists, and the two lists may differ in length. The contract: scores in [-1, 1], one
per prediction, their mean as ``score``, or a ValueError naming the argument and index at fault
(Haystack's messages for differing lengths and ``None`` predictions); never another exception.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz_settings import fuzz
from tests.fuzz_values import ITEM, first_bad

from simkernel.components.evaluators import SASEvaluator


@pytest.fixture(scope="module")
def evaluator(minilm):
    sas = SASEvaluator(model=minilm)
    sas.warm_up()
    return sas


GROUND_TRUTH = st.one_of(ITEM, ITEM, st.lists(ITEM, max_size=3))


def expected_fault(ground_truths: list, predictions: list) -> str | None:
    """A regular expression the ValueError must match, or None when the call is valid."""
    if len(ground_truths) != len(predictions):
        return "number of predictions and labels must be the same"
    if any(p is None for p in predictions):
        return "must not contain None"
    if not predictions:
        return None
    bad = first_bad(predictions)
    if bad is not None:
        return rf"predicted_answers\[{bad[0]}\]"
    for i, truth in enumerate(ground_truths):
        if isinstance(truth, (list, tuple)):  # a tuple of ground truths is a group too
            if not truth:
                return rf"ground_truth_answers\[{i}\] is an empty list"
            bad = first_bad(truth)
            if bad is not None:
                return rf"ground_truth_answers\[{i}\]\[{bad[0]}\]"
        elif first_bad([truth]) is not None:
            return rf"ground_truth_answers\[{i}\]"
    return None


@fuzz(600)
@given(
    ground_truths=st.lists(GROUND_TRUTH, max_size=5),
    predictions=st.lists(ITEM, max_size=5),
    same=st.booleans(),
)
def test_run(evaluator, ground_truths, predictions, same):
    if same:
        predictions = (predictions + ["x"] * len(ground_truths))[: len(ground_truths)]
    fault = expected_fault(ground_truths, predictions)
    if fault is not None:
        with pytest.raises(ValueError, match=fault):
            evaluator.run(ground_truth_answers=ground_truths, predicted_answers=predictions)
        return
    result = evaluator.run(ground_truth_answers=ground_truths, predicted_answers=predictions)
    scores = result["individual_scores"]
    if not predictions:
        assert result == {"score": 0.0, "individual_scores": [0.0]}  # Haystack's answer to no pairs
        return
    assert len(scores) == len(predictions)
    assert all(-1.0 - 1e-6 <= s <= 1.0 + 1e-6 for s in scores), scores
    assert result["score"] == pytest.approx(np.mean(scores))
    for prediction, truth, score in zip(predictions, ground_truths, scores, strict=True):
        if prediction in (truth if isinstance(truth, (list, tuple)) else [truth]):
            assert score == pytest.approx(1.0, abs=1e-5)  # a prediction equal to a ground truth scores 1
