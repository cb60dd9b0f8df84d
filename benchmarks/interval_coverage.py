"""Coverage of the 95% bootstrap intervals by sample size: how often the interval of the mean, of Pearson's r
and of Spearman's rho holds the true value, on normal and on skewed data, at 3 to 100 rows. The source of
the smallest sample the summaries give an interval for (``simkernel.stats.intervals.MIN_ROWS``) and of the
table in docs/statistics.md.

    python benchmarks/interval_coverage.py [--trials 2000] [--resamples 2000] [--sizes 3,4,5,...]

Seeded throughout (each sample from ``numpy.random.default_rng([2026, n, case])``, the bootstrap of trial
``t`` with seed ``t``) and the bootstrap's sums are the same bits on every CPU, so the table is the same on
any machine: it measures the method, not the machine. The intervals are those of
:func:`simkernel.stats.bootstrap_intervals` with ``MIN_ROWS`` set to 1 here, so that the sizes below the
minimum are measured too. The cases, each row a pair ``(x, y)`` from a standard bivariate normal ``(z1,
z2)`` of correlation 0.5:

- ``normal``: ``x = 1 + z1``, ``y = z2``; the true mean 1, Pearson 0.5, Spearman ``6/pi asin(0.25)``;
- ``skewed``: ``x = exp(z1)``, ``y = exp(z2)`` (lognormal, skewness 6.2); the true mean ``exp(1/2)``,
  Pearson ``(e^0.5 - 1) / (e - 1)`` = 0.3775, Spearman unchanged by the monotone maps.

Beside BCa, the mean's coverage with Hesterberg's expanded percentile correction (Hesterberg 2015, "What
teachers should know about the bootstrap", sec. 5.3): the interval's tails taken at
``Phi(-sqrt(n / (n - 1)) t_(n-1, 0.975))`` instead of 2.5% (scipy's t quantile), i.e. the BCa interval at a
wider level; not used by simkernel (docs/statistics.md says why).

``--calibration`` measures instead the intervals of precision and recall that ``simkernel calibrate``
gives at the threshold it chooses (Wilson's, on the rows the threshold was chosen on): each trial ``n``
rows, half positive on average, the score ``N(0, 1)`` for a negative and ``N(1, 1)`` for a positive, the
F1-best threshold ``t`` of :func:`simkernel.calibrate` on them, and the true precision and recall of
"score >= t" from the normal distribution functions; the share of intervals that hold them, and the mean
of the in-sample figure minus the true one (the optimism of choosing the threshold on the same rows).

A cell is the share of the trials that got an interval whose interval holds the truth, and beside it the
share of trials that got none (a correlation undefined in the sample or in most resamples: ties at 3 to 5
rows). A coverage of 2,000 trials has a Monte Carlo standard error of 0.5 points at 95%. Prints a Markdown
table and the command and date to publish beside it. About 8 minutes on one core at the defaults.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
import time

import numpy as np
import scipy.stats

from simkernel.stats import intervals
from simkernel.stats.intervals import bootstrap_intervals

RHO = 0.5
SPEARMAN = 6 / math.pi * math.asin(RHO / 2)
CASES = {
    "normal": {"mean": 1.0, "pearson": RHO, "spearman": SPEARMAN},
    "skewed": {
        "mean": math.exp(0.5),
        "pearson": (math.exp(RHO) - 1) / (math.e - 1),
        "spearman": SPEARMAN,
    },
}
STATISTICS = ("mean", "pearson", "spearman")


def sample(case: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    z = rng.standard_normal((n, 2))
    z1, z2 = z[:, 0], RHO * z[:, 0] + math.sqrt(1 - RHO * RHO) * z[:, 1]
    if case == "normal":
        return 1.0 + z1, z2
    return np.exp(z1), np.exp(z2)


def expanded_level(n: int, level: float = 0.95) -> float:
    """The level whose normal tails are Hesterberg's expanded ones: ``sqrt(n / (n - 1)) t_(n-1)``."""
    z = math.sqrt(n / (n - 1)) * scipy.stats.t.ppf((1 + level) / 2, n - 1)
    return 1 - 2 * scipy.stats.norm.sf(z)


def coverage(case: str, n: int, trials: int, resamples: int) -> dict[str, tuple[int, int]]:
    """figure -> (trials whose interval holds the truth, trials with no interval)."""
    truth = CASES[case]
    rng = np.random.default_rng([2026, n, list(CASES).index(case)])
    hits = dict.fromkeys([*STATISTICS, "mean, expanded"], 0)
    none = dict.fromkeys(hits, 0)
    wider = expanded_level(n)
    for trial in range(trials):
        x, y = sample(case, n, rng)
        found = bootstrap_intervals(x, y, resamples=resamples, seed=trial)
        found["mean, expanded"] = bootstrap_intervals(
            x, statistics=("mean",), resamples=resamples, seed=trial, level=wider
        )["mean"]
        for name, interval in found.items():
            value = truth[name.split(",")[0]]
            if interval is None:
                none[name] += 1
            elif interval.low <= value <= interval.high:
                hits[name] += 1
    return {name: (hits[name], none[name]) for name in hits}


def calibration(n: int, trials: int) -> tuple[float, float, float, float]:
    """(coverage of the true precision, of the true recall, mean optimism of precision, of recall) of
    calibrate's figures at its own threshold."""
    from simkernel.batch.calibrate import figures_with_intervals
    from simkernel.calibration import calibrate

    rng = np.random.default_rng([2026, n, 9])
    normal = scipy.stats.norm
    held = {"precision": 0, "recall": 0}
    optimism: dict[str, list[float]] = {"precision": [], "recall": []}
    done = 0
    while done < trials:
        positive = rng.random(n) < 0.5
        scores = rng.standard_normal(n) + positive
        if positive.all() or not positive.any():
            continue
        done += 1
        threshold = calibrate(scores, positive.astype(float), bootstrap=0).threshold
        figures = figures_with_intervals(scores, positive.astype(float), positive, threshold, 0, 0)
        tpr, fpr = normal.sf(threshold - 1.0), normal.sf(threshold)
        truth = {"precision": tpr / (tpr + fpr), "recall": tpr}
        for name, value in truth.items():
            interval = figures["intervals"][name]
            held[name] += interval is not None and interval["low"] <= value <= interval["high"]
            optimism[name].append(figures[name] - value)
    return (
        held["precision"] / trials,
        held["recall"] / trials,
        float(np.mean(optimism["precision"])),
        float(np.mean(optimism["recall"])),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--sizes", default="3,4,5,8,10,15,20,30,50,100")
    parser.add_argument("--calibration", action="store_true", help="calibrate's precision and recall instead")
    args = parser.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    if args.calibration:
        started = time.perf_counter()
        print(
            "| rows | precision: coverage | recall: coverage | precision: in-sample - true | recall: in-sample - true |"
        )
        print("|---:|---:|---:|---:|---:|")
        for n in sizes:
            p, r, op, orr = calibration(n, args.trials)
            print(f"| {n} | {100 * p:.1f}% | {100 * r:.1f}% | {op:+.3f} | {orr:+.3f} |", flush=True)
        print(
            f"\n{args.trials:,} seeded trials per row, Wilson's 95% intervals at the F1-best threshold; "
            f"`python benchmarks/interval_coverage.py --calibration --trials {args.trials} --sizes {args.sizes}`, "
            f"{today}; {time.perf_counter() - started:.0f} s"
        )
        return 0
    intervals.MIN_ROWS = 1  # measure below the minimum too
    started = time.perf_counter()
    columns = [(case, name) for name in (*STATISTICS, "mean, expanded") for case in CASES]
    print("| rows | " + " | ".join(f"{name} ({case})" for case, name in columns) + " |")
    print("|---:|" + "---:|" * len(columns))
    for n in sizes:
        found = {case: coverage(case, n, args.trials, args.resamples) for case in CASES}
        cells = []
        for case, name in columns:
            hits, none = found[case][name]
            given = args.trials - none
            share = f"{100 * hits / given:.1f}%" if given else "-"
            cells.append(share + (f" ({100 * none / args.trials:.0f}% none)" if none else ""))
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)
    print(
        f"\n{args.trials:,} seeded trials per cell, {args.resamples:,} resamples each, 95% intervals; "
        f"`python benchmarks/interval_coverage.py --trials {args.trials} --resamples {args.resamples} "
        f"--sizes {args.sizes}`, {today}; {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
