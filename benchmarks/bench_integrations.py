"""Haystack indexing: 10,000 documents embedded by simkernel's SimkernelDocumentEmbedder and by
sentence-transformers-haystack's SentenceTransformersDocumentEmbedder (torch CPU), same checkpoint.

    python benchmarks/bench_integrations.py [--documents 10000] [--rounds 2] [--threads N]

The documents are distinct (two SAS answers each, tests/data/sas), so no in-call dedup helps; simkernel's
embedding cache is cleared before each of its turns. Both run ``run(documents=...)`` on the whole list with
``batch_size=32`` and no progress bar; simkernel in fp32 and int8. The engines take turns in every round
(benchmarks/support.py:alternate); a cell is min / median over rounds. Prints a Markdown table and the
machine line (its load average says whether the machine was shared during the run).
"""

from __future__ import annotations

import argparse
import os

from support import MODEL_ID, alternate, checkpoint, distinct_texts, machine, speedup_table


def documents(count: int) -> list:
    from haystack import Document

    texts = distinct_texts()
    n = len(texts)
    return [
        Document(id=str(i), content=f"{texts[i % n]} {texts[(i + 1 + i // n) % n]}") for i in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    import torch
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
    )

    from simkernel.integrations.haystack import SimkernelDocumentEmbedder

    torch.set_num_threads(args.threads)
    docs = documents(args.documents)
    assert len({d.content for d in docs}) == len(docs), "the documents must be distinct"
    peer = SentenceTransformersDocumentEmbedder(model=checkpoint(), progress_bar=False, batch_size=32)
    peer.warm_up()
    ours = {
        precision: SimkernelDocumentEmbedder(
            model=MODEL_ID, precision=precision, threads=args.threads, progress_bar=False, batch_size=32
        )
        for precision in ("fp32", "int8")
    }
    for embedder in ours.values():
        embedder.warm_up()
        embedder.run(documents=docs[:64])  # warm
    peer.run(documents=docs[:64])

    engines = {"sentence-transformers-haystack": lambda: peer.run(documents=docs)}
    setup = {}
    for precision, embedder in ours.items():
        engines[f"simkernel {precision}"] = lambda e=embedder: e.run(documents=docs)
        setup[f"simkernel {precision}"] = lambda e=embedder: e._encoder.cache.clear()
    times = alternate(engines, args.rounds, setup=setup)
    label = f"{args.documents:,} documents"
    print(
        speedup_table(
            {label: times}, "sentence-transformers-haystack", ["simkernel fp32", "simkernel int8"], "indexing"
        )
    )
    rates = ", ".join(f"{name} {args.documents / min(t):,.0f} docs/s" for name, t in times.items())
    print(f"\nBest rates: {rates}. {args.threads} threads each.\n\nMachine: {machine()}")


if __name__ == "__main__":
    main()
