"""SASEvaluator vs the real Haystack SASEvaluator on all 5,025 pairs of tests/data/sas (all-MiniLM-L6-v2).

Haystack's side is tests/data/fixtures/haystack_sas_all_minilm.json, written by
scripts/haystack_reference_scores.sh
(the real haystack-ai 3.4.1 in its own virtual environment; ground truth = answer1, prediction = answer2,
one run() over all pairs). Every individual score must agree within 1e-5.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from simkernel.components.evaluators import SASEvaluator

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "haystack_sas_all_minilm.json"
ATOL = 1e-5


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def test_reference_was_made_from_the_same_data_and_model(reference, data_dir, minilm_checkpoint):
    assert [d["name"] for d in reference["datasets"]] == ["SQuAD", "GermanQuAD", "NQ-open"]
    for entry in reference["datasets"]:
        data = (data_dir / "sas" / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], (
            f"{entry['file']} changed: rerun the script"
        )
        assert len(entry["scores"]) == entry["rows"]
    weights = (minilm_checkpoint / "model.safetensors").read_bytes()
    assert hashlib.sha256(weights).hexdigest() == reference["model_safetensors_sha256"]
    assert reference["versions"]["haystack-ai"] == "3.4.1"


def test_every_sas_pair_matches_haystack(reference, sas_pairs, minilm):
    expected = np.array([s for d in reference["datasets"] for s in d["scores"]])
    assert len(sas_pairs) == len(expected) == 5025
    result = SASEvaluator(model=minilm).run(
        ground_truth_answers=[a for _, a, _, _ in sas_pairs],
        predicted_answers=[b for _, _, b, _ in sas_pairs],
    )
    scores = np.array(result["individual_scores"])
    diff = np.abs(scores - expected)
    worst = int(diff.argmax())
    assert diff.max() <= ATOL, (worst, sas_pairs[worst], scores[worst], expected[worst])
    assert result["score"] == pytest.approx(reference["score"], abs=ATOL)
