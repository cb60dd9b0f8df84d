"""ragas 0.4: its SemanticSimilarity metric, unchanged, over the SAS pairs, on simkernel's
SimkernelRagasEmbedding and on ragas' own HuggingFaceEmbeddings (sentence-transformers, torch CPU), same
checkpoint. Runs in the ragas venv (ragas cannot share simkernel's .venv; `make tool-venvs` builds it)::

    .tool-venvs/ragas/bin/python benchmarks/bench_ragas.py [--limit N] [--rounds 2] [--threads N]

``batch_score`` (ragas' asyncio.run over ``ascore``) on every pair, as ragas runs the metric: two
``embed_text`` calls a pair. simkernel in fp32 and int8, its embedding cache cleared before each of its
turns. The engines take turns in every round (benchmarks/support.py:alternate); a cell is min / median over
rounds. Prints a Markdown table, the largest score difference from ragas' on sentence-transformers, and the
machine line.
"""

from __future__ import annotations

import argparse
import os
import sys

from support import MODEL_ID, alternate, checkpoint, machine, sas_pairs, speedup_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="the first N SAS pairs (default: all 5,025)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    try:
        import torch
        from ragas.embeddings import HuggingFaceEmbeddings
        from ragas.metrics.collections import SemanticSimilarity
    except ImportError as exc:
        sys.exit(
            f"bench_ragas.py needs ragas and sentence-transformers ({exc}); run it in the ragas venv: `make tool-venvs`, then .tool-venvs/ragas/bin/python benchmarks/bench_ragas.py"
        )
    from simkernel.integrations.ragas import SimkernelRagasEmbedding

    torch.set_num_threads(args.threads)
    pairs = [{"reference": a, "response": b} for a, b, _ in sas_pairs()[: args.limit]]
    peer = SemanticSimilarity(embeddings=HuggingFaceEmbeddings(model=checkpoint(), device="cpu"))
    ours = {
        precision: SimkernelRagasEmbedding(model=MODEL_ID, precision=precision, threads=args.threads)
        for precision in ("fp32", "int8")
    }
    metrics = {precision: SemanticSimilarity(embeddings=e) for precision, e in ours.items()}
    warm = pairs[:16]
    peer.batch_score(warm)
    for metric in metrics.values():
        metric.batch_score(warm)

    scores: dict[str, list[float]] = {}

    def run(name: str, metric) -> None:
        scores[name] = [r.value for r in metric.batch_score(pairs)]

    engines = {"ragas HuggingFaceEmbeddings": lambda: run("peer", peer)}
    setup = {}
    for precision, metric in metrics.items():
        engines[f"simkernel {precision}"] = lambda p=precision, m=metric: run(p, m)
        setup[f"simkernel {precision}"] = lambda e=ours[precision]: e.encoder.cache.clear()
    times = alternate(engines, args.rounds, setup=setup)
    label = f"{len(pairs):,} SAS pairs"
    print(
        speedup_table(
            {label: times},
            "ragas HuggingFaceEmbeddings",
            ["simkernel fp32", "simkernel int8"],
            "SemanticSimilarity",
        )
    )
    for precision in ("fp32", "int8"):
        worst = max(abs(a - b) for a, b in zip(scores[precision], scores["peer"], strict=True))
        print(f"\nsimkernel {precision}: largest |score - ragas on sentence-transformers| = {worst:.2e}")
    rates = ", ".join(f"{name} {len(pairs) / min(t):,.0f} pairs/s" for name, t in times.items())
    print(f"\nBest rates: {rates}. {args.threads} threads each.\n\nMachine: {machine()}")


if __name__ == "__main__":
    main()
