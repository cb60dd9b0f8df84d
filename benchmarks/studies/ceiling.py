"""The forward-pass ceiling: what any onnxruntime-based encoder could reach on these texts at best.

An encoder built on onnxruntime spends its time in tokenization, padding, the forward pass and pooling;
the ceiling engine here keeps only the forward pass. Texts are tokenized (simkernel's tokenizer), sorted
by length into batches of 32 and padded once, outside the timed region; the timed call only runs those
prepared batches, data-parallel, one whole batch per worker thread on one single-threaded onnxruntime
session (simkernel's own scheme for multi-batch calls, which measured fastest on this machine;
benchmarks/studies/README.md, the data-parallel row), through simkernel's ``OnnxEncoderSession.run``. No
tokenization, padding, pooling, normalisation or caching is timed (beyond onnxruntime's run, only the
feed dict of each batch), so no engine running the same graph through onnxruntime can be faster than
this one; where even this engine misses a speed target, the target is out of reach for onnxruntime on
that machine. :data:`GRAPHS` names the graphs timed: simkernel's fp32 and per-row int8, and
onnxruntime's own dynamic int8 graph (per-tensor activation scale, made by :func:`dynamic_int8_graph`),
its fastest int8 recipe here, which simkernel cannot ship (a text's embedding then depends on its
batch-mates).

    python benchmarks/studies/ceiling.py [--texts 2000 | --sas] [--rounds 5]

times simkernel's ``TextEncoder`` (fp32, int8; cache off) and the three forward-only engines on the same
texts, taking turns in every round: the first ``--texts`` distinct SAS answers, or with ``--sas`` the
6,535 distinct texts of the 5,025 SAS pairs (bench_sas.py's workload). ``batch_dependence`` gives the
largest movement of a text's token embeddings with a batch-mate under a graph.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from support import alternate, distinct_texts, machine, min_median, simkernel_encoder, store_bundle  # noqa: E402

# the graphs a ceiling is timed for: simkernel's two, and onnxruntime's dynamic int8 (batch-dependent)
GRAPHS = ("fp32", "int8", "dynamic int8")


def forward_only(bundle: Path, graph: str, texts: Sequence[str], threads: int) -> Callable:
    """:func:`forward_only_engine` for one of :data:`GRAPHS` of the store bundle ``bundle`` (the dynamic
    int8 graph is made once, into a folder of the system's temporary directory)."""
    if graph == "dynamic int8":
        folder = Path(tempfile.gettempdir()) / "simkernel-ceiling" / bundle.name
        return forward_only_engine(folder, dynamic_int8_graph(bundle, folder), texts, threads, "all")
    return forward_only_engine(
        bundle, {"fp32": "model.onnx", "int8": "model_int8.onnx"}[graph], texts, threads
    )


def forward_only_engine(
    bundle: Path, graph: str, texts: Sequence[str], threads: int, optimization: str = "basic"
) -> Callable:
    """A callable ``run(texts)`` that runs the forward passes of ``texts`` (deduplicated, as simkernel
    does) through ``bundle/graph`` and returns nothing. ``optimization``: onnxruntime's graph level at load
    ("basic" for simkernel's pre-optimised graphs, "all" for a graph that still needs its fusions).

    The batches of ``texts`` are prepared (tokenization, length-sorted batches of 32, padding) here, once;
    another list is prepared when given (a warm-up call), which that call's time then includes.
    """
    from simkernel.runtime import TextEncoder
    from simkernel.runtime.inference.session import TOKEN_EMBEDDING_OUTPUTS, OnnxEncoderSession
    from simkernel.runtime.inference.tokenizer import length_sorted_batches

    tokenizer = TextEncoder(bundle, cache_size=0)._tokenizer
    session = OnnxEncoderSession(
        bundle / graph, TOKEN_EMBEDDING_OUTPUTS, threads=1, optimization=optimization
    )

    def prepare(items: Sequence[str]) -> list:
        encodings = tokenizer.encode(list(dict.fromkeys(items)))
        return [
            tokenizer.pad_batch([encodings[i] for i in rows]) for rows in length_sorted_batches(encodings, 32)
        ]

    prepared = prepare(texts)
    pool = ThreadPoolExecutor(threads)

    def run(items: Sequence[str], batch_size: int = 32) -> None:
        batches = prepared if items is texts else prepare(items)
        list(pool.map(lambda b: session.run(b.input_ids, b.attention_mask, b.token_type_ids), batches))

    return run


def dynamic_int8_graph(bundle: Path, folder: Path) -> str:
    """Write onnxruntime's dynamic int8 quantisation of ``bundle/model.onnx`` (per-tensor activation
    scale computed over the whole batch, weights per tensor; ``quantize_dynamic``'s defaults) into
    ``folder``, with the bundle's files linked beside it (so ``folder`` is a bundle too); returns its file
    name. Batch-dependent, hence not shippable by simkernel: a ceiling only."""
    from dynamic_int8 import quantize_dynamic_int8

    folder.mkdir(parents=True, exist_ok=True)
    for item in bundle.iterdir():
        if not (folder / item.name).exists():
            (folder / item.name).symlink_to(item)
    target = folder / "model_dynamic_int8.onnx"
    if not target.is_file():
        quantize_dynamic_int8(bundle / "model.onnx", target)
    return target.name


def batch_dependence(folder: Path, graph: str) -> float:
    """Largest |difference| of one text's token embeddings alone vs in a batch with a longer text under
    the graph ``folder/graph`` (0 for simkernel's graphs; not 0 for onnxruntime's dynamic int8 graph)."""
    from simkernel.runtime import TextEncoder
    from simkernel.runtime.inference.session import TOKEN_EMBEDDING_OUTPUTS, OnnxEncoderSession

    tokenizer = TextEncoder(folder, cache_size=0)._tokenizer
    session = OnnxEncoderSession(folder / graph, TOKEN_EMBEDDING_OUTPUTS)
    encodings = tokenizer.encode(["Paris", "The capital of France is a city on the Seine, " * 4])

    def forward(rows):
        batch = tokenizer.pad_batch([encodings[i] for i in rows])
        return session.run(batch.input_ids, batch.attention_mask, batch.token_type_ids)

    alone = forward([0])[0]
    together = forward([0, 1])[0, : alone.shape[0]]
    return float(np.abs(alone - together).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--sas", action="store_true", help="the 6,535 distinct texts of the 5,025 SAS pairs")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    bundle = store_bundle()
    texts = distinct_texts() if args.sas else distinct_texts(args.texts, labelled=True)
    engines = {f"TextEncoder {p}": simkernel_encoder(args.threads, p, bundle) for p in ("fp32", "int8")}
    engines.update({f"forward only, {g}": forward_only(bundle, g, texts, args.threads) for g in GRAPHS})
    calls = {name: (lambda e=engine: e(texts)) for name, engine in engines.items()}
    for call in calls.values():
        call()
    times = alternate(calls, args.rounds)
    print("| engine | sentences/s (min / median time) |\n|---|---|")
    for name, seconds in times.items():
        low, mid = min_median(seconds)
        print(f"| {name} | {len(texts) / low:.0f} / {len(texts) / mid:.0f} |")
    folder = Path(tempfile.gettempdir()) / "simkernel-ceiling" / bundle.name
    moved = batch_dependence(folder, dynamic_int8_graph(bundle, folder))
    print(f"\n{len(texts)} texts, {args.rounds} rounds, {args.threads} threads; dynamic int8: a text's token "
          f"embeddings move by up to {moved:.2g} with a batch-mate; {machine()}")  # fmt: skip


if __name__ == "__main__":
    main()
