"""Accuracy of BERTScore F1 vs the human labels of tests/data/sas, per layer, per dataset (Pearson / Spearman).

    python benchmarks/bertscore_accuracy.py [--models MODEL ...] [--precision fp32]

Rows: simkernel.bert_score's F1 at every layer of each model in the store with token layers (default:
all-MiniLM-L6-v2, and all-mpnet-base-v2 when ``scripts/prepare_test_models.py`` prepared it), idf
off, no rescaling (rescaling is linear per layer: it leaves both correlations unchanged); beside them the
SAS paper's own BERTScore, vanilla and trained (benchmarks/data/paper_scores), and simkernel's bi-encoder
cosine (SASEvaluator, all-MiniLM-L6-v2). Rows without a label (3 in GermanQuAD) are left out. Prints the
Markdown table of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import csv
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

from support import MODEL_ID, REPO, SAS_DIR, machine

MPNET = "sentence-transformers/all-mpnet-base-v2"
DATASETS = (
    ("SQuAD", "SQuAD_SAS.csv", "squad_table_results.csv"),
    ("GermanQuAD", "GermanQuAD_SAS.csv", "german_quad_table_results.csv"),
    ("NQ-open", "NQ-open_SAS.csv", "nq_open_table_results.csv"),
)
PAPER = REPO / "benchmarks" / "data" / "paper_scores"


def read(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["label"].strip()]


def cell(scores, labels) -> str:
    return f"{stats.pearsonr(scores, labels)[0]:.3f} / {stats.spearmanr(scores, labels)[0]:.3f}"


def main() -> None:
    from simkernel.bert_score import BERTScorer
    from simkernel.components.evaluators import SASEvaluator
    from simkernel.runtime import get_token_encoder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=[MODEL_ID, MPNET])
    parser.add_argument("--precision", default="fp32")
    args = parser.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    data = {name: read(SAS_DIR / file) for name, file, _ in DATASETS}
    rows: dict[str, list[str]] = {}
    for model in args.models:
        try:
            depth = get_token_encoder(model, precision=args.precision).num_layers
        except Exception as exc:  # a model not prepared here: say so in the table's notes
            print(f"{model}: not measured ({' '.join(str(exc).split())[:160]})")
            continue
        scorer = BERTScorer(model_type=model, num_layers=depth, all_layers=True, precision=args.precision)
        by_dataset = [  # F1 of every layer, (layers + 1, pairs): one pass of the all-layers graph
            np.asarray(scorer.score([r["answer2"] for r in pairs], [r["answer1"] for r in pairs])[2])
            for pairs in data.values()
        ]
        for layer in range(depth + 1):
            rows[f"{model.split('/')[-1]} layer {layer}"] = [
                cell(f1[layer], [float(r["label"]) for r in pairs])
                for f1, pairs in zip(by_dataset, data.values(), strict=True)
            ]
    sas = SASEvaluator(model=MODEL_ID)
    sas.warm_up()
    rows["simkernel bi-encoder cosine (all-MiniLM-L6-v2)"] = [
        cell(
            sas.run(
                ground_truth_answers=[r["answer1"] for r in pairs],
                predicted_answers=[r["answer2"] for r in pairs],
            )["individual_scores"],
            [float(r["label"]) for r in pairs],
        )
        for pairs in data.values()
    ]
    for column, title in (
        ("bertvanilla", "paper: BERTScore vanilla"),
        ("berttrained", "paper: BERTScore trained"),
    ):
        paper = [read(PAPER / file) for _, _, file in DATASETS]
        rows[title] = [cell([float(r[column]) for r in p], [float(r["label"]) for r in p]) for p in paper]
    print("| BERTScore F1 (Pearson / Spearman) | " + " | ".join(data) + " |")
    print("|---|" + "---|" * len(data))
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nprecision {args.precision}, idf off; {machine()}")


if __name__ == "__main__":
    main()
