"""The calibrated thresholds of the default model (its registry entry) and the held-out check, from the
human-labelled SAS pairs in tests/data/sas.

Calibration data: the two English SAS sets, SQuAD (942 pairs) and NQ-open (3,658), together (4,600 pairs);
GermanQuAD is left out because all-MiniLM-L6-v2 is an English model. Label rule: the labels' midpoint,
``label >= 1`` (1 "partly the same", 2 "same meaning") is a positive. Scores: simkernel's ``SASEvaluator``
(``answer1`` as ground truth, ``answer2`` as prediction) in fp32 and int8; threshold, interval (1,000
bootstrap resamples, seed 0), F1 and kappa from :func:`simkernel.calibrate`.

Held-out: calibrate on one set, then F1 on the other at that threshold next to eval_lib's fixed 0.7 (both
directions, both precisions).

Prints the registry lines (``CalibratedThreshold(...)``, pasted into
``simkernel/runtime/acquisition/registry.py``) and the Markdown tables of README.md and benchmarks/README.md:

    python scripts/calibrate_default_model.py
"""

from __future__ import annotations

import csv
import platform
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SAS = REPO / "tests" / "data" / "sas"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
CALIBRATION_SETS = ("SQuAD", "NQ-open")
FIXED = 0.7  # eval_lib's ReferenceMatchMetric default
POSITIVE_FROM = 1.0


def labelled_pairs(name: str) -> tuple[list[str], list[str], np.ndarray]:
    """(ground truths, predictions, labels) of the rows of ``name`` that have a label."""
    with (SAS / f"{name}_SAS.csv").open(newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["label"].strip()]
    return (
        [r["answer1"] for r in rows],
        [r["answer2"] for r in rows],
        np.array([float(r["label"]) for r in rows]),
    )


def sas_scores(name: str, precision: str) -> tuple[np.ndarray, np.ndarray]:
    from simkernel.components.evaluators import SASEvaluator

    truths, predictions, labels = labelled_pairs(name)
    evaluator = SASEvaluator(model=MODEL, precision=precision)
    scores = evaluator.run(ground_truth_answers=truths, predicted_answers=predictions)["individual_scores"]
    return np.asarray(scores, dtype=np.float64), labels


def main() -> int:
    from simkernel import calibrate
    from simkernel.calibration.binary import stats_of

    started = time.strftime("%b %d %H:%M UTC", time.gmtime())
    print(f"# {MODEL}, {platform.machine()}, {started}\n")
    registry, table, held_out = [], [], []
    for precision in ("fp32", "int8"):
        data = {name: sas_scores(name, precision) for name in CALIBRATION_SETS}
        scores = np.concatenate([data[n][0] for n in CALIBRATION_SETS])
        labels = np.concatenate([data[n][1] for n in CALIBRATION_SETS])
        result = calibrate(scores, labels, positive_from=POSITIVE_FROM, model=MODEL, precision_mode=precision)
        low, high = result.interval
        registry.append(
            f'CalibratedThreshold("{precision}", {result.threshold:.4f}, ({low:.4f}, {high:.4f}), '
            f"f1={result.f1:.4f}, kappa={result.kappa:.4f}, pairs={result.n})"
        )
        fixed = stats_of(scores, labels >= POSITIVE_FROM, FIXED)
        table.append(
            f"| {precision} | {result.threshold:.4f} | {low:.4f} to {high:.4f} | {result.precision:.3f} / "
            f"{result.recall:.3f} / {result.f1:.3f} / {result.kappa:.3f} | {result.youden_threshold:.4f} | "
            f"{fixed.precision:.3f} / {fixed.recall:.3f} / {fixed.f1:.3f} / {fixed.kappa:.3f} |"
        )
        for train, test in (CALIBRATION_SETS, CALIBRATION_SETS[::-1]):
            fitted = calibrate(*data[train], positive_from=POSITIVE_FROM, bootstrap=0)
            positive = data[test][1] >= POSITIVE_FROM
            at_fitted = stats_of(data[test][0], positive, fitted.threshold)
            at_fixed = stats_of(data[test][0], positive, FIXED)
            held_out.append(
                f"| {precision} | {train} ({fitted.n}) | {test} ({positive.size}) | {fitted.threshold:.4f} | "
                f"{at_fitted.f1:.3f} | {at_fixed.f1:.3f} | {at_fitted.kappa:.3f} | {at_fixed.kappa:.3f} |"
            )
    print("registry (simkernel/runtime/acquisition/registry.py):")
    print("\n".join("    " + line for line in registry))
    print("\ncalibrated on SQuAD + NQ-open, label >= 1 positive:\n")
    print(
        "| precision | threshold | 95% interval | precision / recall / F1 / kappa | Youden's J threshold "
        "| at a fixed 0.7: precision / recall / F1 / kappa |"
    )
    print("|---|---|---|---|---|---|")
    print("\n".join(table))
    print("\nheld out:\n")
    print(
        "| precision | calibrated on | F1 measured on | threshold | F1 calibrated | F1 at 0.7 "
        "| kappa calibrated | kappa at 0.7 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(held_out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
