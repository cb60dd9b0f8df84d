"""The default model's calibrated thresholds, reproduced from the SAS data, and the held-out check: a
threshold calibrated on one SAS data set against eval_lib's fixed 0.7 on another (F1 by scikit-learn).

Figures in benchmarks/README.md ("Calibrated thresholds"), from scripts/calibrate_default_model.py.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from sklearn.metrics import f1_score
from tests.conftest import DATA

from simkernel import calibrate
from simkernel.runtime.acquisition.registry import known_model

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
FIXED = 0.7  # eval_lib's ReferenceMatchMetric default


def sas_scores(name: str, precision: str) -> tuple[np.ndarray, np.ndarray]:
    """SASEvaluator scores and labels of the labelled pairs of one SAS data set."""
    from simkernel.components.evaluators import SASEvaluator

    with (DATA / "sas" / f"{name}_SAS.csv").open(newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["label"].strip()]
    result = SASEvaluator(model=MODEL, precision=precision).run(
        ground_truth_answers=[r["answer1"] for r in rows], predicted_answers=[r["answer2"] for r in rows]
    )
    return np.asarray(result["individual_scores"]), np.array([float(r["label"]) for r in rows])


@pytest.fixture(scope="module")
def english_sas() -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    return {(name, "fp32"): sas_scores(name, "fp32") for name in ("SQuAD", "NQ-open")}


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_registry_thresholds_are_reproduced_from_the_sas_data(english_sas, precision):
    data = (
        english_sas
        if precision == "fp32"
        else {(n, "int8"): sas_scores(n, "int8") for n in ("SQuAD", "NQ-open")}
    )
    scores = np.concatenate([data[("SQuAD", precision)][0], data[("NQ-open", precision)][0]])
    labels = np.concatenate([data[("SQuAD", precision)][1], data[("NQ-open", precision)][1]])
    result = calibrate(scores, labels, positive_from=1)
    entry = known_model(MODEL).calibrated_threshold(precision)
    assert (entry.pairs, result.n) == (4600, 4600)
    assert round(result.threshold, 4) == entry.threshold
    assert tuple(round(v, 4) for v in result.interval) == entry.interval
    assert (round(result.f1, 4), round(result.kappa, 4)) == (entry.f1, entry.kappa)
    assert entry.rule.startswith("label >= 1") and "SQuAD + NQ-open" in entry.data


@pytest.mark.slow
@pytest.mark.parametrize(("train", "test"), [("NQ-open", "SQuAD"), ("SQuAD", "NQ-open")])
def test_held_out_calibrated_threshold_beats_the_fixed_one(english_sas, train, test):
    fitted = calibrate(*english_sas[(train, "fp32")], positive_from=1, bootstrap=0)
    scores, labels = english_sas[(test, "fp32")]
    positive = labels >= 1
    calibrated_f1 = f1_score(positive, scores >= fitted.threshold)
    fixed_f1 = f1_score(positive, scores >= FIXED)
    print(
        f"{train} -> {test}: threshold {fitted.threshold:.4f}, F1 {calibrated_f1:.3f}, at 0.7 {fixed_f1:.3f}"
    )
    assert calibrated_f1 > fixed_f1 + 0.05
