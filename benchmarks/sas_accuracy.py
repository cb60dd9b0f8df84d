"""Accuracy of SAS scores vs the human labels of tests/data/sas, per dataset (Pearson r / Spearman rho).

Rows: simkernel's SASEvaluator with all-MiniLM-L6-v2 in fp32 and int8 (scored here), the real Haystack
SASEvaluator on the same checkpoint (tests/data/fixtures/haystack_sas_all_minilm.json, written by
scripts/haystack_reference_scores.sh), and the metrics of the SAS paper's own files
(benchmarks/data/paper_scores: cross-encoder SAS, bi-encoder, BERTScore trained, F1).
Rows without a human label (3 in GermanQuAD) are left out. Prints a Markdown table (the one in
docs/benchmarks.md) and, with ``--json PATH``, writes the figures.

Then the agreement of the int8 graph with fp32: the cosine between the int8 and the fp32 embedding of each
of the 6,535 distinct texts of the 5,025 pairs (min, 1st percentile, mean). It depends on the CPU: on x86
without AVX512-VNNI (AVX2 only) onnxruntime's u8 x s8 matrix product adds adjacent byte products in 16 bits
with saturation (VPMADDUBSW), which VNNI's 32-bit sums do not, so int8 figures differ between CPUs.

    python benchmarks/sas_accuracy.py [--json sas_accuracy.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats

from support import FIXTURES, MODEL_ID, REPO, SAS_DIR, distinct_texts, machine

HAYSTACK_SCORES = FIXTURES / "haystack_sas_all_minilm.json"
# name, pairs file, paper scores file
DATASETS = (
    ("SQuAD", "SQuAD_SAS.csv", "squad_table_results.csv"),
    ("GermanQuAD", "GermanQuAD_SAS.csv", "german_quad_table_results.csv"),
    ("NQ-open", "NQ-open_SAS.csv", "nq_open_table_results.csv"),
)
PAPER_METRICS = (
    ("sas", "paper: cross-encoder SAS"),
    ("bi_encoder", "paper: bi-encoder"),
    ("berttrained", "paper: BERTScore trained"),
    ("f1", "paper: F1"),
)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def correlations(scores, labels) -> tuple[float, float]:
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    keep = ~(np.isnan(scores) | np.isnan(labels))
    return float(stats.pearsonr(scores[keep], labels[keep])[0]), float(
        stats.spearmanr(scores[keep], labels[keep])[0]
    )


def label_of(text: str) -> float:
    return float(text) if text.strip() else math.nan


def simkernel_scores(pairs: list[dict[str, str]], precision: str) -> list[float]:
    from simkernel.components.evaluators import SASEvaluator

    evaluator = SASEvaluator(model=MODEL_ID, precision=precision)
    return evaluator.run(
        ground_truth_answers=[p["answer1"] for p in pairs], predicted_answers=[p["answer2"] for p in pairs]
    )["individual_scores"]


def int8_vs_fp32() -> dict[str, float]:
    """Cosine of each distinct SAS text's int8 embedding with its fp32 one: min, 1st percentile, mean."""
    from simkernel.runtime import TextEncoder

    texts = distinct_texts()
    fp32, int8 = (TextEncoder(MODEL_ID, precision=p, cache_size=0).encode(texts) for p in ("fp32", "int8"))
    a, b = fp32.astype(np.float64), int8.astype(np.float64)
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return {
        "texts": len(texts),
        "min": float(cosine.min()),
        "p1": float(np.percentile(cosine, 1)),
        "mean": float(cosine.mean()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()

    haystack = {d["name"]: d["scores"] for d in json.loads(HAYSTACK_SCORES.read_text("utf-8"))["datasets"]}
    table: dict[str, dict[str, tuple[float, float]]] = {}
    counts = {}
    for name, pairs_file, paper_file in DATASETS:
        pairs = read_csv(SAS_DIR / pairs_file)
        paper = read_csv(REPO / "benchmarks" / "data" / "paper_scores" / paper_file)
        labels = [label_of(p["label"]) for p in pairs]
        counts[name] = int(np.sum(~np.isnan(labels)))
        assert [(p["answer1"], p["answer2"]) for p in pairs] == [(p["answer1"], p["answer2"]) for p in paper]
        rows = {
            "simkernel fp32": simkernel_scores(pairs, "fp32"),
            "simkernel int8": simkernel_scores(pairs, "int8"),
            "Haystack SASEvaluator (same checkpoint)": haystack[name],
        }
        for column, title in PAPER_METRICS:
            rows[title] = [float(p[column]) if p[column] != "" else math.nan for p in paper]
        for title, scores in rows.items():
            table.setdefault(title, {})[name] = correlations(scores, labels)

    names = [n for n, _, _ in DATASETS]
    header = " | ".join(f"{n} ({counts[n]}) r / rho" for n in names)
    print(f"| scores (all-MiniLM-L6-v2 unless said) | {header} |")
    print("|---|" + "---|" * len(names))
    for title, per_dataset in table.items():
        cells = " | ".join(f"{per_dataset[n][0]:.3f} / {per_dataset[n][1]:.3f}" for n in names)
        print(f"| {title} | {cells} |")
    agreement = int8_vs_fp32()
    print(
        f"\nint8 vs fp32 embeddings of the {agreement['texts']:,} distinct texts: cosine min "
        f"{agreement['min']:.4f}, 1st percentile {agreement['p1']:.4f}, mean {agreement['mean']:.4f}; "
        f"{machine()}"
    )
    if args.json:
        figures = {"labelled_rows": counts, "pearson_spearman": table, "int8_vs_fp32": agreement}
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
