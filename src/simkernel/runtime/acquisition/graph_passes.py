"""Graph passes on exported ONNX files, torch-free (onnx and onnxruntime only): offline optimisation,
simkernel's per-row int8, external weights, and the hub's local int8 step that chains them.

Used by the exporter (:mod:`simkernel.runtime.acquisition.export`) and by the hub download
(:mod:`simkernel.runtime.acquisition.hub`), which makes per-row int8 from a downloaded fp32 graph without
torch when the ``onnx`` package is installed.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from simkernel._optional import import_optional
from simkernel.runtime.acquisition.export_probes import PROBE_TEXTS
from simkernel.runtime.acquisition.parity import ParityError
from simkernel.runtime.acquisition.quantize import DEFAULT_QUANTIZATION, quantize_model, weight_matmuls
from simkernel.runtime.inference.text_encoder import BundleTextEncoder

LOCAL_INT8_MIN_COSINE = 0.97  # the export's int8 parity tolerance, here against the fp32 graph
LOCAL_INT8_FILES = ("model_int8.onnx", "model_int8.onnx_data")


@contextlib.contextmanager
def warnings_silenced() -> Iterator[None]:
    """Silence warnings inside the block (torch's and onnxruntime's tracer and optimizer chatter)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _transformer_shape(src_config: dict) -> tuple[int, int]:
    heads = int(src_config.get("num_attention_heads") or src_config.get("n_heads") or 0)
    hidden = int(src_config.get("hidden_size") or src_config.get("dim") or 0)
    return heads, hidden


def optimize_graph(src: Path, dst: Path, config, fuse: bool = True) -> dict:
    """Write ``src`` optimised to ``dst``: transformer fusions (when ``fuse``), then onnxruntime's offline
    ``extended`` level for the CPU provider. Returns the manifest facts."""
    import onnxruntime as ort

    info: dict[str, Any] = {}
    source = src
    if fuse:
        from onnxruntime.transformers.optimizer import optimize_model

        heads, hidden = _transformer_shape(
            json.loads((config.path / "config.json").read_text(encoding="utf-8"))
        )
        with warnings_silenced():
            fused = optimize_model(
                str(src), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0
            )
        stats = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
        source = dst.with_suffix(".fused.onnx")
        fused.save_model_to_file(str(source))
        info["fusions"] = stats
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(dst)
    options.log_severity_level = 3
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    if source != src:
        source.unlink()
    info["graph_optimization"] = "extended"
    info["optimized_for"] = "CPUExecutionProvider"
    return info


def per_row_int8(
    fp32_graph: Path, target: Path, work: Path, config, keep_fp32: Iterable[str] = ()
) -> tuple[dict, dict]:
    """Write simkernel's per-row int8 graph of ``fp32_graph`` to ``target``; returns (the optimisation's
    manifest facts, the quantisation's, with ``kept_fp32`` when ``keep_fp32`` matched dense layers).

    The one recipe for the export and for hub models: the fp32 graph is optimised offline at onnxruntime's
    ``extended`` level (into ``work``), then quantised, and not optimised again: optimising after
    quantisation fuses Add + LayerNormalization into SkipLayerNormalization, which measured ~10% slower
    here (docs/design-notes.md). ``config``: the model's config, or None.
    """
    optimized = work / "fp32_extended.onnx"
    info = optimize_graph(fp32_graph, optimized, config, fuse=False)
    kept = matching_dense_layers(optimized, keep_fp32)
    qinfo = quantize_model(optimized, target, method=DEFAULT_QUANTIZATION, exclude_nodes=kept)
    if kept:
        qinfo["kept_fp32"] = kept
    return info, qinfo


def matching_dense_layers(path: Path, patterns: Iterable[str]) -> list[str]:
    """Names of the dense-layer ``MatMul`` nodes of the graph ``path`` that contain one of ``patterns``;
    a pattern that matches none is an error naming the layers there are."""
    patterns = [p for p in patterns if p]
    if not patterns:
        return []
    names = weight_matmuls(path)
    unmatched = [p for p in patterns if not any(p in n for n in names)]
    if unmatched:
        raise ValueError(
            f"int8_keep_fp32 {unmatched} matches no dense layer of the graph; its dense layers are named like {names[:3]} ... {names[-1:]}"
        )
    return [n for n in names if any(p in n for p in patterns)]


def externalize_weights(path: Path) -> dict:
    """Move the weights of the ONNX file ``path`` into ``<name>_data`` beside it (ONNX external data);
    returns the manifest facts.

    onnxruntime memory-maps external data instead of parsing it out of the protobuf: loading the default
    model measured 0.26 s -> 0.07 s in a fresh process and RSS after loading 186 -> 117 MB, at the same
    speed (docs/design-notes.md). Tensors under 1 KiB stay in the graph file.
    """
    onnx = import_optional("onnx", "export", "writing ONNX external data")
    model = onnx.load(str(path))
    data = path.with_name(path.name + "_data")
    data.unlink(missing_ok=True)  # onnx appends to an existing data file
    onnx.save_model(
        model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=data.name
    )
    return {"external_data": data.name}


def keep_output(model: Any, output: str, rename: str | None = None) -> Any:
    """A copy of the ONNX ``model`` (a ``ModelProto``, weights loaded or external) that computes the graph
    output ``output`` alone: only the nodes, initializers, inputs and value infos it depends on are kept, so
    onnxruntime runs nothing else (it runs every node of a graph whatever outputs are asked for: measured on
    all-MiniLM-L6-v2, asking the all-layers graph for the embedding output alone took as long as asking for
    every layer, 1.42 s vs 1.34 s for 32 x 128 tokens on one thread). ``rename``: the output's name in the
    copy. External-data references of the initializers are kept as they are (same file, offsets)."""
    onnx = import_optional("onnx", "export", "cutting an ONNX graph down to one output")
    graph = model.graph
    producers = {name: node for node in graph.node for name in node.output}
    needed: set[str] = set()
    kept_nodes: set[int] = set()
    pending = [output]
    while pending:
        tensor = pending.pop()
        if tensor in needed:
            continue
        needed.add(tensor)
        node = producers.get(tensor)
        if node is not None and id(node) not in kept_nodes:
            kept_nodes.add(id(node))
            pending.extend(name for name in node.input if name)
            for attribute in node.attribute:  # a subgraph's outer-scope reads
                for sub in [attribute.g, *attribute.graphs]:
                    pending.extend(name for n in sub.node for name in n.input if name)
    if output not in producers and output not in {i.name for i in graph.input}:
        raise ValueError(f"the graph has no tensor {output!r} to keep")
    cut = onnx.ModelProto()
    cut.CopyFrom(model)
    target = cut.graph
    nodes = [n for n in graph.node if id(n) in kept_nodes]
    del target.node[:]
    target.node.extend(nodes)
    del target.initializer[:]
    target.initializer.extend(i for i in graph.initializer if i.name in needed)
    del target.input[:]
    target.input.extend(i for i in graph.input if i.name in needed)
    del target.value_info[:]
    target.value_info.extend(v for v in graph.value_info if v.name in needed and v.name != output)
    outputs = [o for o in graph.output if o.name == output]
    del target.output[:]
    target.output.extend(outputs)
    if rename is not None and rename != output:
        for node in target.node:
            node.output[:] = [rename if name == output else name for name in node.output]
            node.input[:] = [rename if name == output else name for name in node.input]
        for out in target.output:
            out.name = rename
    return cut


def split_token_layer_graphs(
    full: Path, bundle: Path, precision: str, layer_outputs: list[str]
) -> dict[str, dict]:
    """Write a token-layers bundle's graphs of ``precision`` from ``full`` (an optimised graph with the
    outputs of :func:`~simkernel.runtime.acquisition.trace.export_hidden_states_graph`): its weights into
    ``<graph>_data`` once, the all-layers graph (output ``hidden_states``) and one graph per layer (output
    ``hidden_state``, :func:`~simkernel.runtime.store.layout.layer_graph_name`), all reading that one weights
    file. ``layer_outputs[L]``: the name of layer L's output in ``full``. Returns each written graph's
    manifest facts (``layer``: an int, or ``"all"``).

    One graph per layer, not one graph asked for one output: onnxruntime runs the whole graph whatever is
    asked (:func:`keep_output`), and the layer-L graph costs L layers as BERTScore's truncated model does
    (measured on all-MiniLM-L6-v2, 32 x 128 tokens, one thread: layer 1 0.25 s, layer 3 0.76 s, layer 6
    1.53 s; layer 0 4 ms). The per-layer graphs hold no weights (15-61 KB each for all-MiniLM-L6-v2).
    """
    from simkernel.runtime.store.layout import (
        ALL_LAYERS_OUTPUT,
        LAYER_OUTPUT,
        PRECISIONS,
        layer_graph_name,
    )

    onnx = import_optional("onnx", "export", "writing ONNX external data")
    name = PRECISIONS[precision]
    data = name + "_data"
    (bundle / data).unlink(missing_ok=True)  # onnx appends to an existing data file
    whole = bundle / f".{name}.whole"
    onnx.save_model(
        onnx.load(str(full)),
        str(whole),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=data,
    )
    skeleton = onnx.load(str(whole), load_external_data=False)
    whole.unlink()
    written: dict[str, dict] = {}
    onnx.save(keep_output(skeleton, ALL_LAYERS_OUTPUT), str(bundle / name))
    written[name] = {
        "precision": precision,
        "layer": "all",
        "output": ALL_LAYERS_OUTPUT,
        "external_data": data,
    }
    for layer, output in enumerate(layer_outputs):
        graph = keep_output(skeleton, output, LAYER_OUTPUT)
        layer_name = layer_graph_name(precision, layer)
        onnx.save(graph, str(bundle / layer_name))
        written[layer_name] = {
            "precision": precision,
            "layer": layer,
            "output": LAYER_OUTPUT,
            "external_data": data,
        }
    return written


def local_int8(folder: Path) -> dict:
    """Write ``model_int8.onnx`` (+ ``_data``) in the bundle ``folder`` by per-row quantisation of its fp32
    graph (:func:`per_row_int8`, :func:`externalize_weights`) and check it against the fp32 graph on
    :data:`~simkernel.runtime.acquisition.export_probes.PROBE_TEXTS`; returns its manifest facts.

    Raises :class:`ParityError` (its files removed) when the minimum cosine between the two graphs'
    embeddings is below :data:`LOCAL_INT8_MIN_COSINE`.
    """
    target = folder / LOCAL_INT8_FILES[0]
    written = tuple(folder / name for name in LOCAL_INT8_FILES)
    for stale in written:
        stale.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        info, quantization = per_row_int8(folder / "model.onnx", target, Path(tmp), None)
    info.update(externalize_weights(target), quantization=quantization)
    fp32 = BundleTextEncoder(folder, threads=1, cache_size=0).encode(PROBE_TEXTS)
    int8 = BundleTextEncoder(folder, precision="int8", threads=1, cache_size=0).encode(PROBE_TEXTS)
    cosine = (fp32.astype("float64") * int8).sum(axis=1)
    check = {"min_cosine_vs_fp32": float(cosine.min()), "probe_texts": len(PROBE_TEXTS)}
    if not cosine.min() >= LOCAL_INT8_MIN_COSINE:
        for path in written:
            path.unlink(missing_ok=True)
        raise ParityError(
            f"simkernel's per-row int8 misses its check against fp32 (min cosine {cosine.min():.4f} < {LOCAL_INT8_MIN_COSINE})"
        )
    return {**info, "parity_vs_fp32": check}
