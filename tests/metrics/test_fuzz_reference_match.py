"""Fuzzing ``ReferenceMatchMetric`` through ``evaluate`` (hypothesis, 400 cases per run) on the local
provider.

References and outputs are valid texts (Russian, Chinese, emoji, NUL, empty), non-str values and strings
with lone surrogates. The contract: eval_lib's formula (each cosine clamped to [0, 1], then max or mean;
checked here in float64 on the model's embeddings), or a TypeError / ValueError naming the field or
``references[i]`` at fault; never another exception.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz_settings import fuzz
from tests.fuzz_values import ITEM, first_bad

from simkernel import EvalTestCase, ReferenceMatchMetric, evaluate
from simkernel.runtime import get_text_encoder


@fuzz(400)
@given(
    output=ITEM,
    references=st.lists(ITEM, max_size=4),
    aggregation=st.sampled_from(["max", "mean"]),
)
def test_reference_match(default_model_ready, output, references, aggregation):
    bad = first_bad(references)
    if bad is not None:
        with pytest.raises((TypeError, ValueError), match=rf"references\[{bad[0]}\]"):
            ReferenceMatchMetric(references=references, aggregation=aggregation, embedding_provider="local")
        return
    metric = ReferenceMatchMetric(references=references, aggregation=aggregation, embedding_provider="local")
    try:
        case = EvalTestCase(input="q", actual_output="" if output is None else output)
    except ValueError as exc:  # pydantic's ValidationError (it accepts bytes, as eval_lib's class does)
        assert not isinstance(output, str) and "actual_output" in str(exc)
        return
    if references and first_bad([case.actual_output]) is not None:  # no references: no text is read
        with pytest.raises(ValueError, match=r"test_case\.actual_output"):
            asyncio.run(evaluate([case], [metric], verbose=False))
        return
    [(_, [result])] = asyncio.run(evaluate([case], [metric], verbose=False))
    data = result.metrics_data[0]
    if not references:
        assert data.score == 0.0 and not data.success
        return
    vectors = get_text_encoder().encode([case.actual_output, *references]).astype(np.float64)
    sims = np.clip(vectors[1:] @ vectors[0], 0.0, 1.0)
    expected = sims.max() if aggregation == "max" else sims.mean()
    assert data.score == pytest.approx(expected, abs=1e-5)
    assert data.success == (data.score >= metric.threshold)
