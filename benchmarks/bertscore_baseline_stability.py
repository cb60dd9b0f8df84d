"""How many random pairs a BERTScore baseline needs: the spread of ``simkernel bertscore-baseline``'s values
over seeds, by number of pairs, on the English texts the repo ships.

    python benchmarks/bertscore_baseline_stability.py [--model ID] [--seeds 20] [--pairs 100 300 1000 2500]

The corpus: the distinct answers of the SAS data's two English datasets (tests/data/sas, SQuAD and NQ-open),
the lines of fewer than 32 words as bert_score's method keeps them. For each number of pairs, the baseline
(:func:`simkernel.scoring.bertscore.baselines.compute_baseline`, every layer, idf off) is computed with
seeds 0 .. K-1; the table gives, over layers and over P, R and F, the largest spread (max - min over the
seeds) and the largest standard deviation, and what that spread does to a rescaled F of a typical pair
(``(F - b) / (1 - b)`` moves by about ``spread * (1 - F) / (1 - b)^2``, taken at the layer's median F of
the SAS pairs). Prints the Markdown table of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from support import MODEL_ID, machine, sas_rows


def english_corpus() -> list[str]:
    """The distinct answers of SQuAD_SAS.csv and NQ-open_SAS.csv, in order of appearance."""
    seen: dict[str, None] = {}
    for row in sas_rows(("SQuAD_SAS.csv", "NQ-open_SAS.csv")):
        seen.setdefault(row["answer1"], None)
        seen.setdefault(row["answer2"], None)
    return list(seen)


def main() -> None:
    from simkernel.runtime import get_token_encoder
    from simkernel.scoring.bertscore.baselines import compute_baseline, corpus_pairs
    from simkernel.scoring.bertscore.matching import score_pairs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=MODEL_ID)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--pairs", type=int, nargs="+", default=[100, 300, 1000, 2500])
    args = parser.parse_args()
    encoder = get_token_encoder(args.model, precision="fp32")
    corpus = english_corpus()
    usable = len(corpus_pairs(corpus, None, 0)[0])
    rows = [(a["answer1"], a["answer2"]) for a in sas_rows(("SQuAD_SAS.csv", "NQ-open_SAS.csv"))]
    typical = score_pairs(encoder, [b for _, b in rows], [a for a, _ in rows], layer=None).scores
    median_f = np.median(typical[:, :, 2], axis=1)  # (layers + 1,): the median F of the SAS pairs per layer
    print(f"corpus: {len(corpus)} distinct English SAS answers, {usable} pairs at most (half the kept lines)")
    print(
        "| pairs | seconds per baseline | largest spread over seeds (P, R, F; any layer) | largest std | "
        "change of a typical rescaled F |"
    )
    print("|---|---|---|---|---|")
    for pairs in [p for p in args.pairs if p <= usable]:
        started = time.perf_counter()
        tables = np.stack([compute_baseline(encoder, corpus, pairs=pairs, seed=s) for s in range(args.seeds)])
        seconds = (time.perf_counter() - started) / args.seeds
        spread = np.ptp(tables, axis=0)  # (layers + 1, 3)
        mean = tables.mean(axis=0)
        rescaled = spread[:, 2] * (1 - median_f) / (1 - mean[:, 2]) ** 2
        print(
            f"| {pairs:,} | {seconds:.1f} | {spread.max():.4f} | {tables.std(axis=0).max():.4f} | "
            f"{rescaled.max():.4f} |"
        )
    print(f"\n{args.model}, fp32, {args.seeds} seeds; {machine()}")


if __name__ == "__main__":
    main()
