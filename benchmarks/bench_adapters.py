"""LangChain and LlamaIndex: simkernel's embeddings against each tool's own sentence-transformers embeddings
(langchain-huggingface's HuggingFaceEmbeddings, llama-index-embeddings-huggingface's HuggingFaceEmbedding;
torch CPU), same checkpoint, through each tool's batch call. In the adapters venv (langchain-huggingface pins
huggingface-hub < 2, below simkernel's .venv)::

    benchmarks/peer_venv.sh adapters
    .bench-venvs/adapters/bin/python benchmarks/bench_adapters.py [--texts 5000] [--rounds 2] [--threads N]

LangChain: ``embed_documents(texts)``; LlamaIndex: ``get_text_embedding_batch(texts)`` (LlamaIndex cuts the
list into ``embed_batch_size`` calls: 32 for its HuggingFaceEmbedding here, as sentence-transformers'
batch, instead of its default 10; simkernel's adapter takes up to 2,048 per call and runs batches of 32).
Every engine normalises. The texts are distinct SAS answers (tests/data/sas); simkernel's embedding cache is
cleared before each of its turns; simkernel in fp32, int8 and (where the CPU has bf16) bf16. The engines
take turns in every round (benchmarks/support.py:alternate); a cell is min / median over rounds. Prints a
Markdown table, the largest 1 - cosine between simkernel's vectors and the peer's, and the machine line.
"""

from __future__ import annotations

import argparse
import os
import sys

from support import (
    MODEL_ID,
    alternate,
    checkpoint,
    cosine_rows,
    distinct_texts,
    machine,
    simkernel_precisions,
    speedup_table,
)

LANGCHAIN_PEER = "LangChain HuggingFaceEmbeddings"
LLAMAINDEX_PEER = "LlamaIndex HuggingFaceEmbedding"


def largest_cosine_gap(ours: list[list[float]], theirs: list[list[float]]) -> float:
    """max over rows of 1 - cos(ours_i, theirs_i), in float64."""
    return float((1.0 - cosine_rows(ours, theirs)).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    try:
        import torch
        from langchain_huggingface import HuggingFaceEmbeddings
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    except ImportError as exc:
        sys.exit(
            f"bench_adapters.py needs langchain-huggingface and llama-index-embeddings-huggingface ({exc}); build their venv with `benchmarks/peer_venv.sh adapters`, then run .bench-venvs/adapters/bin/python benchmarks/bench_adapters.py"
        )
    from simkernel.integrations.langchain import SimkernelEmbeddings
    from simkernel.integrations.llama_index import SimkernelEmbedding

    torch.set_num_threads(args.threads)
    texts = distinct_texts(args.texts)
    model = checkpoint()
    peers = {
        LANGCHAIN_PEER: HuggingFaceEmbeddings(
            model_name=model,
            model_kwargs={"device": "cpu"},
            encode_kwargs={"batch_size": 32, "normalize_embeddings": True},
        ),
        LLAMAINDEX_PEER: HuggingFaceEmbedding(model_name=model, device="cpu", embed_batch_size=32),
    }
    ours = {
        LANGCHAIN_PEER: {
            p: SimkernelEmbeddings(model=MODEL_ID, precision=p, threads=args.threads)
            for p in simkernel_precisions()
        },
        LLAMAINDEX_PEER: {
            p: SimkernelEmbedding(model=MODEL_ID, precision=p, threads=args.threads)
            for p in simkernel_precisions()
        },
    }
    calls = {LANGCHAIN_PEER: "embed_documents", LLAMAINDEX_PEER: "get_text_embedding_batch"}

    vectors: dict[tuple[str, str], list[list[float]]] = {}
    tables, gaps = [], []
    for tool, peer in peers.items():
        method = calls[tool]

        def run(key: tuple[str, str], embedder, method=method) -> None:
            vectors[key] = getattr(embedder, method)(texts)

        getattr(peer, method)(texts[:64])  # warm
        engines = {tool: lambda t=tool, e=peer: run((t, "peer"), e)}
        setup = {}
        for precision, embedder in ours[tool].items():
            getattr(embedder, method)(texts[:64])
            name = f"simkernel {precision}"
            engines[name] = lambda t=tool, p=precision, e=embedder: run((t, p), e)
            setup[name] = lambda e=embedder: e.encoder.cache.clear()
        times = alternate(engines, args.rounds, setup=setup)
        names = [f"simkernel {p}" for p in ours[tool]]
        tables.append(speedup_table({f"{len(texts):,} texts": times}, tool, names, method))
        for precision in ours[tool]:
            gap = largest_cosine_gap(vectors[(tool, precision)], vectors[(tool, "peer")])
            gaps.append(f"{tool} vs simkernel {precision}: {gap:.1e}")
        rates = ", ".join(f"{n} {len(texts) / min(t):,.0f} texts/s" for n, t in times.items())
        tables[-1] += f"\n\nBest rates: {rates}."
    print("\n\n".join(tables))
    print("\nLargest 1 - cosine against the peer's vectors: " + "; ".join(gaps) + ".")
    print(f"\n{args.threads} threads each.\n\nMachine: {machine()}")


if __name__ == "__main__":
    main()
