"""What the summary's 95% intervals cost beside the scoring, on the 5,025 SAS pairs, 10,000 resamples.

    python benchmarks/bench_stats.py [--rounds 3] [--resamples 10000] [--precision fp32]

Cases, taking turns in every round (support.alternate):

- ``scoring``: the sas metric's scorer (what ``simkernel score --mode sas`` runs per chunk) on the 5,025
  pairs of tests/data/sas (ground truth = answer1, prediction = answer2), its embedding cache cleared
  before each turn, so every turn embeds every text again (the model loaded once, before the rounds:
  ``simkernel score`` times the load apart);
- ``intervals``: :func:`simkernel.batch.summary.summarize` minus the same call with ``resamples=0``, i.e.
  what the intervals add to the summary of that run: the BCa bootstrap of the mean score over the 5,025
  rows, of Pearson's r and Spearman's rho against the 5,022 human labels (their own resamples, since 3
  rows have no label), and the Wilson interval of a pass rate (threshold 0.7);
- ``compare``: :func:`simkernel.stats.paired_comparison` of the fp32 scores against the int8 ones (the
  bootstrap of the mean difference and 10,000 sign flips).

Prints a Markdown table (min / median of the rounds) and the ratio of the intervals' time to the
scoring's (the target: under 5%). ``--rows 100000,1000000`` also times the intervals alone (the mean,
Pearson's r and Spearman's rho, ``--resamples``) on that many synthetic rows: scores with 4 decimals (so
with ties, as a file's scores have) against 5 label values, seeded; how their cost grows with a file.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys

import numpy as np

from simkernel.batch.summary import summarize
from simkernel.scoring.registry import get_metric
from simkernel.scoring.settings import ScoringSettings
from simkernel.stats import paired_comparison
from support import alternate, duration, machine, min_median, sas_pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--precision", default="fp32", choices=("fp32", "int8"))
    parser.add_argument(
        "--rows", default="", help="comma-separated row counts of synthetic samples to time too"
    )
    args = parser.parse_args()

    pairs = sas_pairs()
    assert len(pairs) == 5025, len(pairs)
    truths, predictions = [p[0] for p in pairs], [p[1] for p in pairs]
    labels = [None if math.isnan(p[2]) else p[2] for p in pairs]
    metric = get_metric("sas")
    scorer = metric.scorer(ScoringSettings.from_options(precision=args.precision))
    scorer.load()
    scores = np.asarray(scorer.score(predictions, truths), dtype=np.float64)
    other = metric.scorer(
        ScoringSettings.from_options(precision="int8" if args.precision == "fp32" else "fp32")
    )
    other.load()
    other_scores = np.asarray(other.score(predictions, truths), dtype=np.float64)

    def summary(resamples: int):
        return summarize(
            scores=scores, labels=labels, label_column="label", threshold=0.7, description="sas",
            elapsed_s=0.0, load_s=0.0, score_s=1.0, output="-", resamples=resamples,
        )  # fmt: skip

    found = summary(args.resamples).as_dict()["intervals"]
    print(f"intervals of the 5,025 pairs: {found}", file=sys.stderr)
    cache = getattr(scorer, "clear_cache", None) or _clear(scorer)
    times = alternate(
        {
            "scoring": lambda: scorer.score(predictions, truths),
            "summary with intervals": lambda: summary(args.resamples),
            "summary without": lambda: summary(0),
            "compare": lambda: paired_comparison(scores, other_scores, resamples=args.resamples),
        },
        args.rounds,
        setup={"scoring": cache},
    )
    rows = [("scoring (sas, " + args.precision + ")", times["scoring"])]
    extra = [w - wo for w, wo in zip(times["summary with intervals"], times["summary without"], strict=True)]
    rows.append((f"intervals ({args.resamples:,} resamples)", extra))
    rows.append((f"compare ({args.resamples:,} resamples and sign flips)", times["compare"]))
    print("| case | min | median | vs scoring (min / median) |\n|---|---|---|---|")
    base_min, base_median = min_median(times["scoring"])
    for name, values in rows:
        low, mid = min_median(values)
        print(
            f"| {name} | {duration(low)} | {duration(mid)} | {low / base_min:.1%} / {mid / base_median:.1%} |"
        )
    print(f"\nMin / median of {args.rounds} rounds; {machine()}.")
    if args.rows:
        by_rows([int(n) for n in args.rows.split(",")], args.resamples, args.rounds)


def by_rows(sizes: list[int], resamples: int, rounds: int) -> None:
    """The intervals alone on synthetic samples of each size: min / median seconds of ``rounds`` calls."""
    from simkernel.stats import bootstrap_intervals

    rng = np.random.default_rng(0)
    print(f"\n| rows | intervals of the mean, Pearson and Spearman ({resamples:,} resamples): min | median |")
    print("|---|---|---|")
    for n in sizes:
        scores = np.round(rng.random(n), 4)
        labels = rng.integers(0, 5, n) / 4.0
        call = functools.partial(bootstrap_intervals, scores, labels, resamples=resamples)
        times = alternate({"intervals": call}, rounds)
        low, mid = min_median(times["intervals"])
        print(f"| {n:,} | {duration(low)} | {duration(mid)} |")
    print(f"\nMin / median of {rounds} rounds; {machine()}.")


def _clear(scorer):
    """The callable that empties the scorer's embedding cache (each turn embeds every text again)."""
    for path in ("cache", "model.cache", "_model.cache", "encoder.cache"):
        target = scorer
        for part in path.split("."):
            target = getattr(target, part, None)
            if target is None:
                break
        if target is not None and hasattr(target, "clear"):
            return target.clear
    sys.exit("cannot find the sas scorer's embedding cache to clear between rounds; update bench_stats.py")


if __name__ == "__main__":
    main()
