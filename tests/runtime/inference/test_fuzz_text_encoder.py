"""Fuzzing ``TextEncoder.encode`` (hypothesis, 1,000 cases per run) on the default model.

Items are valid texts (Russian, Chinese, emoji, NUL, control and bidi characters, empty), non-str values
and strings holding a lone surrogate. The contract: a float32 (n, 384) array of finite unit vectors,
the same vector for the same text wherever it stands, or a TypeError (a non-str item) / ValueError (a
lone surrogate) naming ``texts[i]`` of the first bad item; never another exception.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz_settings import fuzz
from tests.fuzz_values import ITEM, first_bad


@fuzz(1000)
@given(items=st.lists(ITEM, max_size=6))
def test_encode(encoder, items):
    bad = first_bad(items)
    if bad is not None:
        index, kind = bad
        with pytest.raises(TypeError if kind == "type" else ValueError, match=rf"texts\[{index}\]"):
            encoder.encode(items)
        return
    vectors = encoder.encode(items)
    assert vectors.dtype == np.float32 and vectors.shape == (len(items), 384)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for i, text in enumerate(items):
        np.testing.assert_array_equal(vectors[i], vectors[items.index(text)])


def test_a_one_megabyte_text_is_truncated_not_refused(encoder):
    big = "Лев Толстой написал «Войну и мир». " * 30_000  # 1 MB of text, truncated at 256 tokens
    head = big[:2_000]
    vectors = encoder.encode([big, head])
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)  # same first 256 tokens, same vector
