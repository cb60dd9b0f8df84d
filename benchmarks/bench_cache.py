"""The persistent embedding cache: the 5,025 SAS pairs scored in a fresh process, cold and warm.

    python benchmarks/bench_cache.py [--rounds 3] [--precision fp32]

Three engines, each a new interpreter that imports simkernel, reads the SAS pairs, scores all 5,025 with
``SASEvaluator(model="sentence-transformers/all-MiniLM-L6-v2")`` in ONE ``run()`` and exits, timed around
``subprocess.run`` (so the import and the model load count):

- ``cold, no cache``: ``cache_dir=""`` (the cache off);
- ``cold, cache on``: ``cache_dir=DIR``, the folder deleted before each of its turns (the run embeds every
  distinct text, hashes the bundle and writes the 6,535 vectors);
- ``warm, cache on``: the same folder filled by an untimed run beforehand (the run reads every vector from
  the cache and never loads the model).

The engines take turns in every round (:func:`support.alternate`); every run's scores are checked to be
identical. Targets of the cache: warm >= 20x faster than cold with no cache; cold with the cache <= 5%
slower than with none. Prints the Markdown table of docs/benchmarks.md.

``--overhead``: what the cache adds to a cold run, timed alone in this process (a shared machine's noise
between two 10-second runs is larger than the few percent to be measured): into a new folder, the bundle's
checksum (every file hashed, no memo yet), the lookup of the 6,535 distinct texts (all missing) and the
write of their 6,535 vectors, per round; printed with its share of the cold runs' min and median.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from support import MODEL_ID, alternate, duration, machine, min_median

CHILD = """
import hashlib, sys
sys.path.insert(0, {benchmarks!r})
from support import sas_pairs
from simkernel.components.evaluators import SASEvaluator
pairs = sas_pairs()
evaluator = SASEvaluator(model={model!r}, precision={precision!r}, cache_dir={cache_dir!r})
scores = evaluator.run(ground_truth_answers=[p[0] for p in pairs], predicted_answers=[p[1] for p in pairs])
print(len(pairs), hashlib.sha256(repr(scores["individual_scores"]).encode()).hexdigest())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--precision", default="fp32", choices=("fp32", "int8"))
    parser.add_argument("--overhead", type=int, default=5, metavar="ROUNDS", help="rounds of the overhead")
    args = parser.parse_args()
    benchmarks = str(Path(__file__).resolve().parent)
    results: set[str] = set()

    def run(cache_dir: str) -> None:
        code = CHILD.format(
            benchmarks=benchmarks, model=MODEL_ID, precision=args.precision, cache_dir=cache_dir
        )
        done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
        results.add(done.stdout.strip())

    with tempfile.TemporaryDirectory() as root:
        cold, warm = Path(root, "cold"), Path(root, "warm")
        run(str(warm))  # fills the warm cache (untimed)
        times = alternate(
            {
                "cold, no cache": lambda: run(""),
                "cold, cache on": lambda: run(str(cold)),
                "warm, cache on": lambda: run(str(warm)),
            },
            args.rounds,
            setup={"cold, cache on": lambda: shutil.rmtree(cold, ignore_errors=True)},
        )
    assert len(results) == 1 and results.pop().startswith("5025 "), "the runs gave different scores"
    base_min, base_median = min_median(times["cold, no cache"])
    print("| run (fresh process, 5,025 SAS pairs) | min | median | vs cold, no cache (min / median) |")
    print("|---|---|---|---|")
    for name, seconds in times.items():
        low, mid = min_median(seconds)
        speed = f"{base_min / low:.2f}x / {base_median / mid:.2f}x"
        share = f"{low / base_min:.3f} / {mid / base_median:.3f}"
        print(f"| {name} | {duration(low)} | {duration(mid)} | {speed} faster; {share} of its time |")
    overhead = cache_overhead(args.precision, args.overhead)
    low, mid = min_median(overhead)
    print(
        f"| the cache's own work in a cold run (checksum, lookup, write; in-process) | {duration(low)} "
        f"| {duration(mid)} | {low / base_min:.3f} / {mid / base_median:.3f} of a cold run |"
    )
    print(f"\n{args.precision}, {args.rounds} rounds ({args.overhead} of the overhead); {machine()}")


def cache_overhead(precision: str, rounds: int) -> list[float]:
    """Seconds of the disk cache's work in a cold run of the 5,025 pairs, one value per round."""
    import time

    import numpy as np

    from simkernel.runtime.inference.disk_cache import DiskEmbeddingCache
    from simkernel.runtime.store.bundle_digest import bundle_digest
    from support import distinct_texts, store_bundle

    texts, folder = distinct_texts(), store_bundle()
    vectors = np.random.default_rng(0).standard_normal((len(texts), 384)).astype(np.float32)
    seconds = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as root:
            start = time.perf_counter()
            cache = DiskEmbeddingCache(root)
            key = bundle_digest(folder, precision, cache.file_hash)
            positions, _ = cache.lookup(key, texts)
            cache.put_many(key, texts, vectors)
            seconds.append(time.perf_counter() - start)
            cache.close()
            assert positions.size == 0
    return seconds


if __name__ == "__main__":
    main()
