"""SimkernelDeepEvalEmbedding in the real deepeval, in its own venv (scripts/tool_venv.sh deepeval: its
install adds pytest plugins, kept out of this session): deepeval's interface, its synthesizer's context
grouping and cosine, against sentence-transformers on the same checkpoint within 1e-5."""

from __future__ import annotations

import numpy as np
import pytest
from tool_venv import run_checks

ATOL = 1e-5
CHECKS = [
    "is_a_deepeval_embedding_model",
    "context_construction_config_takes_it",
    "vectors_match_sentence_transformers",
    "synthesizer_cosines",
    "synthesizer_groups_contexts_as_on_sentence_transformers",
    "async_methods_equal_the_sync_ones",
    "one_encoder_call_per_list",
    "a_embed_texts_does_not_block_the_event_loop",
]


@pytest.fixture(scope="module")
def result(minilm, checkpoint, tmp_path_factory):
    home = tmp_path_factory.mktemp("deepeval")
    # deepeval keeps its settings and telemetry id under HOME and the working folder: both a temporary one
    env = {"HOME": str(home), "DEEPEVAL_TELEMETRY_OPT_OUT": "1"}
    return run_checks("deepeval", "deepeval_checks.py", minilm, str(checkpoint), cwd=home, env=env)


def test_every_check_ran(result):
    assert sorted(result["checks"]) == sorted(CHECKS)


@pytest.mark.parametrize("name", CHECKS)
def test_check_in_the_deepeval_venv(result, name):
    assert result["checks"][name] is None, result["checks"][name]


def test_deepeval_cosines_equal_sentence_transformers(result):
    ours = np.array(result["numbers"]["simkernel"])
    reference = np.array(result["numbers"]["sentence_transformers"])
    assert len(ours) == len(reference) == 36
    np.testing.assert_allclose(ours, reference, atol=ATOL)
    assert reference.std() > 0.1
