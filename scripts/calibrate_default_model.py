"""The calibrated thresholds of the default model (its registry entry) and the held-out check, from the
human-labelled SAS pairs in tests/data/sas.

Calibration data: the two English SAS sets, SQuAD (942 pairs) and NQ-open (3,658), together (4,600 pairs);
GermanQuAD is left out because all-MiniLM-L6-v2 is an English model. Label rule: the labels' midpoint,
``label >= 1`` (1 "partly the same", 2 "same meaning") is a positive. Scores: simkernel's ``SASEvaluator``
(``answer1`` as ground truth, ``answer2`` as prediction) in fp32; threshold, interval (1,000 bootstrap
resamples, seed 0), F1 and kappa from :func:`simkernel.calibrate`.

int8 takes the fp32 fit. int8 scores depend on the CPU (onnxruntime's int8 matrix product sums exactly with
VNNI / AMX and saturates pairs of products in 16 bits with AVX2 or AVX-512 without VNNI), and the best-F1
threshold sits on a flat stretch of the F1 curve, so an int8 fit moves with the CPU (0.489 with exact sums,
0.4727 with saturating ones) while fp32's does not. What the script measures for int8 instead is how it
decides at that threshold next to fp32, on this CPU and on both kinds of x86-64 kernel emulated
(tests/runtime/inference/x86_int8.py): the share of the pairs that flip side, and F1 and kappa against
fp32's. The registry's tolerances (``max_flipped``, ``max_difference``) bound those with a margin; its own
fit per kernel is printed too, for comparison.

Held-out: calibrate on one set, then F1 on the other at that threshold next to eval_lib's fixed 0.7 (both
directions, fp32).

Prints the registry lines (``CalibratedThreshold(...)``, pasted into
``simkernel/runtime/acquisition/registry.py``) and the Markdown tables of docs/calibration.md and docs/benchmarks.md:

    python scripts/calibrate_default_model.py
"""

from __future__ import annotations

import csv
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MAX_FLIPPED, MAX_DIFFERENCE = 0.015, 0.006  # the registry's int8 tolerances (see the module docstring)
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


def sas_scores(name: str, precision: str, model: object = MODEL) -> tuple[np.ndarray, np.ndarray]:
    from simkernel.components.evaluators import SASEvaluator

    truths, predictions, labels = labelled_pairs(name)
    evaluator = SASEvaluator(model=model, precision=precision)
    scores = evaluator.run(ground_truth_answers=truths, predicted_answers=predictions)["individual_scores"]
    return np.asarray(scores, dtype=np.float64), labels


def main() -> int:
    from simkernel import calibrate
    from simkernel.calibration.binary import stats_of
    from simkernel.runtime.store import bundles as store

    sys.path.insert(0, str(REPO))
    from tests.runtime.inference.x86_int8 import KERNELS, emulated_bundle, this_cpu_kernel

    started = time.strftime("%b %d %H:%M UTC", time.gmtime())
    print(f"# {MODEL}, {platform.machine()}, int8 kernel of this CPU: {this_cpu_kernel()}, {started}\n")
    data = {name: sas_scores(name, "fp32") for name in CALIBRATION_SETS}
    scores = np.concatenate([data[n][0] for n in CALIBRATION_SETS])
    labels = np.concatenate([data[n][1] for n in CALIBRATION_SETS])
    positive = labels >= POSITIVE_FROM
    result = calibrate(scores, labels, positive_from=POSITIVE_FROM, model=MODEL, precision_mode="fp32")
    low, high = result.interval
    fit = f"{result.threshold:.4f}, ({low:.4f}, {high:.4f}), f1={result.f1:.4f}, kappa={result.kappa:.4f}"
    registry = [
        f'CalibratedThreshold("fp32", {fit}, pairs={result.n})',
        f'CalibratedThreshold("int8", {fit}, pairs={result.n}, fitted_on="fp32", '
        f"max_flipped={MAX_FLIPPED}, max_difference={MAX_DIFFERENCE})",
    ]
    fixed = stats_of(scores, positive, FIXED)
    table = [
        f"| fp32 | {result.threshold:.4f} | {low:.4f} to {high:.4f} | {result.precision:.3f} / "
        f"{result.recall:.3f} / {result.f1:.3f} / {result.kappa:.3f} | {result.youden_threshold:.4f} | "
        f"{fixed.precision:.3f} / {fixed.recall:.3f} / {fixed.f1:.3f} / {fixed.kappa:.3f} |"
    ]
    at_fp32 = stats_of(scores, positive, result.threshold)
    agreement = []
    with tempfile.TemporaryDirectory() as tmp:
        bundles = {"this CPU": MODEL} | {
            k: emulated_bundle(store.model_dir(MODEL), Path(tmp) / k, k) for k in KERNELS
        }
        for kernel, model in bundles.items():
            int8 = np.concatenate([sas_scores(n, "int8", model)[0] for n in CALIBRATION_SETS])
            flipped = int(((int8 >= result.threshold) != (scores >= result.threshold)).sum())
            at = stats_of(int8, positive, result.threshold)
            own = calibrate(int8, labels, positive_from=POSITIVE_FROM, bootstrap=0)
            agreement.append(
                f"| int8, {kernel} | {flipped} ({flipped / scores.size:.2%}) | {at.f1:.4f} ({at.f1 - at_fp32.f1:+.4f}) "
                f"| {at.kappa:.4f} ({at.kappa - at_fp32.kappa:+.4f}) | {own.threshold:.4f} |"
            )
    held_out = []
    for train, test in (CALIBRATION_SETS, CALIBRATION_SETS[::-1]):
        fitted = calibrate(*data[train], positive_from=POSITIVE_FROM, bootstrap=0)
        test_positive = data[test][1] >= POSITIVE_FROM
        at_fitted = stats_of(data[test][0], test_positive, fitted.threshold)
        at_fixed = stats_of(data[test][0], test_positive, FIXED)
        held_out.append(
            f"| fp32 | {train} ({fitted.n}) | {test} ({test_positive.size}) | {fitted.threshold:.4f} | "
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
    print(
        f"\nint8 at the fp32 threshold {result.threshold:.4f} (fp32: F1 {at_fp32.f1:.4f}, kappa {at_fp32.kappa:.4f}):\n"
    )
    print("| scores | pairs flipped vs fp32 | F1 (vs fp32) | kappa (vs fp32) | its own best-F1 threshold |")
    print("|---|---|---|---|---|")
    print("\n".join(agreement))
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
