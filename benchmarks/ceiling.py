"""The forward-pass ceiling: what any onnxruntime-based encoder could reach on these texts at best.

An encoder built on onnxruntime spends its time in tokenization, padding, the forward pass and pooling;
the ceiling engine here keeps only the forward pass. Texts are tokenized (simkernel's tokenizer), sorted
by length into batches of 32 and padded once, outside the timed region; the timed call only runs those
prepared batches, data-parallel, one whole batch per worker thread on one single-threaded onnxruntime
session (simkernel's own scheme for multi-batch calls, which measured fastest on this machine;
benchmarks/README.md, "Data-parallel batches"). No tokenization, pooling, normalisation, caching or
Python bookkeeping is timed, so no engine running the same graph through onnxruntime can be faster than
this one; where even this engine misses a speed target, the target is out of reach for onnxruntime on
that machine. ``dynamic_int8_graph`` makes onnxruntime's own dynamic int8 graph (per-tensor activation
scale), its fastest int8 recipe here, which simkernel cannot ship (a text's embedding then depends on its
batch-mates), as the int8 ceiling next to simkernel's per-row graph.

Used by bench_encoder.py (``--ceiling``) and bench_sas.py (group ``sas 5025 pairs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np


def session_feed(batch, names: set[str]) -> dict[str, np.ndarray]:
    """onnxruntime's input dict of a padded ``simkernel.runtime.tokenizer.Batch``, restricted to the
    graph's input ``names`` (not every model takes ``token_type_ids``)."""
    feed = {
        "input_ids": batch.input_ids,
        "attention_mask": batch.attention_mask,
        "token_type_ids": batch.token_type_ids,
    }
    return {k: v for k, v in feed.items() if k in names}


def forward_only_engine(
    bundle: Path, graph: str, texts: Sequence[str], threads: int, optimization: str = "basic"
) -> Callable:
    """A callable ``run(texts)`` that runs the forward passes of ``texts`` (deduplicated, as simkernel
    does) through ``bundle/graph`` and returns nothing. ``optimization``: onnxruntime's graph level at load
    ("basic" for simkernel's pre-optimised graphs, "all" for a graph that still needs its fusions).

    The batches of ``texts`` are prepared (tokenization, length-sorted batches of 32, padding) here, once;
    another list is prepared when first given (a warm-up call), which that call's time then includes.
    """
    import onnxruntime as ort

    from simkernel.runtime import TextEncoder
    from simkernel.runtime.tokenizer import length_sorted_batches

    tokenizer = TextEncoder(bundle, cache_size=0)._tokenizer
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[optimization]
    options.log_severity_level = 3
    session = ort.InferenceSession(str(bundle / graph), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}

    def prepare(items: Sequence[str]) -> list[dict[str, np.ndarray]]:
        encodings = tokenizer.encode(list(dict.fromkeys(items)))
        feeds = []
        for rows in length_sorted_batches(encodings, 32):
            feeds.append(session_feed(tokenizer.pad_batch([encodings[i] for i in rows]), names))
        return feeds

    prepared = {id(texts): prepare(texts)}
    pool = ThreadPoolExecutor(threads)

    def run(items: Sequence[str], batch_size: int = 32) -> None:
        feeds = prepared.get(id(items))
        if feeds is None:
            feeds = prepare(items)
        list(pool.map(lambda feed: session.run(None, feed), feeds))

    run.keep = texts  # type: ignore[attr-defined]  # keeps id(texts) from being reused
    return run


def dynamic_int8_graph(bundle: Path, folder: Path) -> str:
    """Write onnxruntime's dynamic int8 quantisation of ``bundle/model.onnx`` (per-tensor activation
    scale computed over the whole batch, weights per tensor; ``quantize_dynamic``'s defaults) into
    ``folder``, with the bundle's files linked beside it (so ``folder`` is a bundle too); returns its file
    name. Batch-dependent,
    hence not shippable by simkernel: a ceiling only."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder.mkdir(parents=True, exist_ok=True)
    for item in bundle.iterdir():
        if not (folder / item.name).exists():
            (folder / item.name).symlink_to(item)
    target = folder / "model_dynamic_int8.onnx"
    if not target.is_file():
        from onnx import TensorProto

        quantize_dynamic(
            str(bundle / "model.onnx"),
            str(target),
            weight_type=QuantType.QInt8,
            # the pre-optimised graph holds contrib operators that ONNX shape inference cannot type
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
    return target.name


def batch_dependence(folder: Path, graph: str) -> float:
    """Largest |difference| of one text's token embeddings alone vs in a batch with a longer text under
    the graph ``folder/graph`` (0 for simkernel's graphs; not 0 for onnxruntime's dynamic int8 graph)."""
    import onnxruntime as ort

    from simkernel.runtime import TextEncoder

    tokenizer = TextEncoder(folder, cache_size=0)._tokenizer
    session = ort.InferenceSession(str(folder / graph), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    encodings = tokenizer.encode(["Paris", "The capital of France is a city on the Seine, " * 4])

    def forward(rows):
        return session.run(None, session_feed(tokenizer.pad_batch([encodings[i] for i in rows]), names))[0]

    alone = forward([0])[0]
    together = forward([0, 1])[0, : alone.shape[0]]
    return float(np.abs(alone - together).max())
