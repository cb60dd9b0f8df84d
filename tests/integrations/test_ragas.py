"""SimkernelRagasEmbedding in the real ragas 0.4, in its own venv (scripts/tool_venv.sh ragas): ragas'
SemanticSimilarity metric, unchanged, scores SAS pairs on simkernel as on ragas' sentence-transformers
HuggingFaceEmbeddings (same checkpoint), within 1e-5."""

from __future__ import annotations

import numpy as np
import pytest
from tool_venv import run_checks

ATOL = 1e-5
CHECKS = [
    "is_a_base_ragas_embedding",
    "vectors_match_ragas_huggingface_embeddings",
    "semantic_similarity_scores",
    "ascore_in_a_running_loop",
    "async_methods_equal_the_sync_ones",
    "one_encoder_call_per_list",
    "aembed_texts_does_not_block_the_event_loop",
    "texts_are_checked_as_ragas_does",
    "copies_made_after_the_first_call_embed_the_same",
    "the_first_async_call_loads_the_model_off_the_event_loop",
]


@pytest.fixture(scope="module")
def result(minilm, checkpoint, data_dir, tmp_path_factory):
    sas = str(data_dir / "sas" / "SQuAD_SAS.csv")
    # ragas' analytics off (nothing leaves the machine on the build and CI machines anyway)
    env = {"RAGAS_DO_NOT_TRACK": "true"}
    return run_checks(
        "ragas",
        "ragas_checks.py",
        minilm,
        str(checkpoint),
        sas,
        cwd=tmp_path_factory.mktemp("ragas"),
        env=env,
    )


def test_every_check_ran(result):
    assert sorted(result["checks"]) == sorted(CHECKS)


@pytest.mark.parametrize("name", CHECKS)
def test_check_in_the_ragas_venv(result, name):
    assert result["checks"][name] is None, result["checks"][name]


def test_semantic_similarity_equals_ragas_on_sentence_transformers(result):
    ours, reference = np.array(result["numbers"]["simkernel"]), np.array(result["numbers"]["huggingface"])
    assert len(ours) == len(reference) == 60
    np.testing.assert_allclose(ours, reference, atol=ATOL)
    assert reference.std() > 0.1  # pairs that differ, not one score repeated


def test_the_comparison_tells_a_different_model_apart(result):
    """The tolerance is tight enough to fail: int8 (a slightly different model) is outside it."""
    int8, reference = (
        np.array(result["numbers"]["simkernel_int8"]),
        np.array(result["numbers"]["huggingface"]),
    )
    assert np.abs(int8 - reference).max() > 10 * ATOL
    np.testing.assert_allclose(int8, reference, atol=0.1)  # and still the same model, roughly
