"""AnswerExactMatchEvaluator against Haystack's real one: same outputs, types, errors and messages."""

from __future__ import annotations

import pytest
from haystack.components.evaluators import AnswerExactMatchEvaluator as HaystackEM
from hypothesis import given
from hypothesis import strategies as st

from simkernel.components.evaluators import AnswerExactMatchEvaluator

CASES = [
    (["Berlin", "Paris"], ["Berlin", "Lyon"]),
    (["Berlin"], ["berlin"]),  # case sensitive
    ([" Berlin"], ["Berlin"]),  # whitespace sensitive
    (["Москва", "北京"], ["Москва", "北京 "]),
    (["a", "a", "a"], ["a", "a", "a"]),
    ([""], [""]),
    ([None], [None]),  # Haystack compares with ==, None == None counts
    ([1, "1"], [1, 1]),
]


@pytest.mark.parametrize("ground_truths, predictions", CASES)
def test_same_result_and_types_as_haystack(ground_truths, predictions):
    expected = HaystackEM().run(ground_truth_answers=ground_truths, predicted_answers=predictions)
    result = AnswerExactMatchEvaluator().run(
        ground_truth_answers=ground_truths, predicted_answers=predictions
    )
    assert result == expected
    assert list(result) == list(expected)  # key order: individual_scores, score
    assert type(result["score"]) is type(expected["score"]) is float
    assert all(type(s) is int for s in result["individual_scores"])


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "A", "a ", "", "б", "中"]), st.sampled_from(["a", "A", "", "б"])),
        min_size=1,
        max_size=20,
    )
)
def test_random_inputs_match_haystack(pairs):
    ground_truths = [g for g, _ in pairs]
    predictions = [p for _, p in pairs]
    assert AnswerExactMatchEvaluator().run(ground_truths, predictions) == HaystackEM().run(
        ground_truths, predictions
    )


@pytest.mark.parametrize(
    "ground_truths, predictions",
    [([], []), ([], ["a"]), (["a"], []), (["a", "b"], ["a"]), (["a"], ["a", "b"])],
)
def test_errors_are_haystacks(ground_truths, predictions):
    with pytest.raises(ValueError) as expected:
        HaystackEM().run(ground_truth_answers=ground_truths, predicted_answers=predictions)
    with pytest.raises(ValueError) as ours:
        AnswerExactMatchEvaluator().run(ground_truth_answers=ground_truths, predicted_answers=predictions)
    assert str(ours.value) == str(expected.value)


def test_serialisation():
    data = AnswerExactMatchEvaluator().to_dict()
    assert data == {
        "type": "simkernel.components.evaluators.answer_exact_match.AnswerExactMatchEvaluator",
        "init_parameters": {},
    }
    from haystack.core.serialization import component_to_dict

    haystack_data = component_to_dict(HaystackEM(), "em")
    assert haystack_data["init_parameters"] == data["init_parameters"]
    assert isinstance(AnswerExactMatchEvaluator.from_dict(haystack_data), AnswerExactMatchEvaluator)
    assert isinstance(AnswerExactMatchEvaluator.from_dict(data), AnswerExactMatchEvaluator)
