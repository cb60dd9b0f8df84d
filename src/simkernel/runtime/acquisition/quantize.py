"""int8 quantisation of an exported fp32 transformer graph, batch-independent by construction.

Why not onnxruntime's ``quantize_dynamic``: its ``DynamicQuantizeLinear`` computes ONE activation scale
over the whole input tensor, i.e. over every token of every text in the batch. A text's embedding then
depends on which other texts share its batch (docs/design-notes.md), so an evaluation metric would
give the same pair different scores depending on what else is scored. That is a defect for an evaluation
library, so this package does not offer it (the study that measures it has its own copy,
``benchmarks/studies/dynamic_int8.py``).

The methods here (chosen by measurement, ``benchmarks/studies/int8_study.py``):

``"per-row"`` (the default)
    Every ``MatMul`` whose right operand is a weight initializer ``W`` (K, N) becomes::

        s   = max(|x|, over the last axis) / 127          one scale per token row (batch, seq, 1)
        q   = saturate(round_half_even(x / s) + 128)      uint8, symmetric (zero point 128, values 1..255)
        y   = ((q - 128) @ Wq) * sw * s                    int32 accumulation, exact; then float

    with ``Wq`` int8, symmetric, one scale ``sw`` per output column (per-channel). The uint8 activations
    with a zero point take onnxruntime's u8 x s8 kernels (VNNI / AVX2); int8 x int8 ran 10x slower.
    A token's quantised activations depend on that token alone: the embedding of a text does not
    depend on its batch-mates (up to the float rounding noise of the fp32 parts, which can flip one
    rounding step). Needs no calibration data. Activation x activation products (attention scores) stay fp32.
``"static"``
    onnxruntime ``quantize_static`` (QDQ, per-channel int8 weights, uint8 activations) with scales
    calibrated on the texts given; also batch-independent, but its fixed ranges clip outliers of
    texts unlike the calibration set.
Weights are rounded half-to-even (numpy/ONNX ``Round``), clipped to [-127, 127].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from simkernel._optional import import_optional

QUANTIZATION_METHODS = ("per-row", "static")
DEFAULT_QUANTIZATION = "per-row"
QUANTIZE_OPSET = 21  # QuantizeLinear with block_size (one scale per token row)


def quantize_model(
    src: str | Path,
    dst: str | Path,
    method: str = DEFAULT_QUANTIZATION,
    calibration_feeds: Iterable[Mapping[str, np.ndarray]] | None = None,
    exclude_nodes: Iterable[str] = (),
) -> dict:
    """Write an int8 version of the fp32 ONNX graph ``src`` to ``dst``; returns its manifest description.

    ``calibration_feeds`` (input name -> int64 array dicts) is required by ``"static"`` only.
    ``exclude_nodes`` names MatMul nodes to keep in fp32. Needs the ``onnx`` package (export extra).
    """
    if method not in QUANTIZATION_METHODS:
        raise ValueError(f"method must be one of {QUANTIZATION_METHODS}, got {method!r}")
    src, dst = Path(src), Path(dst)
    if method == "per-row":
        count = quantize_per_row(src, dst, exclude_nodes=exclude_nodes)
        return {
            "method": method,
            "weights": "int8 symmetric per output channel",
            "activations": "int8 symmetric per token row, computed at run time",
            "quantized_matmuls": count,
            "batch_independent": True,
        }
    quant = import_optional("onnxruntime.quantization", "export", "int8 quantisation")
    # method == "static"
    if calibration_feeds is None:
        raise ValueError("method='static' needs calibration_feeds (input name -> int64 array dicts)")
    reader = _FeedReader(list(calibration_feeds))
    quant.quantize_static(
        str(src),
        str(dst),
        reader,
        quant_format=quant.QuantFormat.QDQ,
        op_types_to_quantize=["MatMul"],
        per_channel=True,
        activation_type=quant.QuantType.QUInt8,
        weight_type=quant.QuantType.QInt8,
        nodes_to_quantize=weight_matmuls(src),
        nodes_to_exclude=list(exclude_nodes),
        calibrate_method=quant.CalibrationMethod.MinMax,
        extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
    )
    return {
        "method": method,
        "format": "QDQ",
        "weights": "int8 per channel",
        "activations": "uint8 static (MinMax calibration)",
        "calibration_batches": len(reader.feeds),
        "batch_independent": True,
    }


class _FeedReader:
    """onnxruntime CalibrationDataReader over a list of feed dicts."""

    def __init__(self, feeds: list[Mapping[str, np.ndarray]]) -> None:
        self.feeds = feeds
        self._it = iter(feeds)

    def get_next(self):
        return next(self._it, None)

    def rewind(self) -> None:
        self._it = iter(self.feeds)


def weight_matmuls(path: str | Path) -> list[str]:
    """Names of the MatMul nodes whose second input is a 2-D initializer (the dense layers)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name: i for i in model.graph.initializer}
    return [
        n.name
        for n in model.graph.node
        if n.op_type == "MatMul" and n.input[1] in inits and len(inits[n.input[1]].dims) == 2
    ]


def quantize_per_row(src: str | Path, dst: str | Path, exclude_nodes: Iterable[str] = ()) -> int:
    """Rewrite ``src`` with per-row (per-token) symmetric int8 activations and per-channel int8 weights
    for every weight MatMul (see the module docstring); returns how many MatMuls were quantised.

    The graph form was chosen by measurement (``benchmarks/studies/graph_profile.py``, see
    docs/design-notes.md): onnxruntime runs every operator as a separate pass over the activations, so
    the fewer full-size operators per dense layer, the faster. Per distinct activation tensor ``x``
    (Q, K and V share theirs), three full-size passes::

        s  = max(ReduceMax(Abs(x), axis=-1), 1e-12) / 127        (batch, seq, 1), tiny ops after the reduce
        xq = QuantizeLinear(x, s, 128, axis=-1, block_size=K)      one block per row: uint8, zero point 128

    and per weight, two::

        y  = MatMulIntegerToFloat(xq, Wq, 1, sw, 128) * s         int32 accumulation, per-column sw folded in

    ``QuantizeLinear`` with ``block_size`` needs opset 21 (onnxruntime >= 1.20; checked with 1.20.1 and
    1.32.0, whose int8 kernels give slightly different numbers: min cosine 0.996 between the two): the
    graph's default-domain opset is converted to 21 first. ``MatMulIntegerToFloat`` is onnxruntime's
    contrib operator (``com.microsoft``); its A scale must be a scalar, hence the row scale as a separate
    ``Mul``.
    """
    onnx = import_optional("onnx", "export", "int8 quantisation")
    from onnx import TensorProto, helper, numpy_helper, version_converter

    model = onnx.load(str(src))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    if opset < QUANTIZE_OPSET:
        model = version_converter.convert_version(model, QUANTIZE_OPSET)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    excluded = set(exclude_nodes)
    new_nodes, new_inits, count = [], [], 0
    quantized_inputs: dict[str, tuple[str, str]] = {}  # float tensor -> (its uint8 rows, their scales)

    def const(name: str, value: np.ndarray) -> str:
        new_inits.append(numpy_helper.from_array(value, name))
        return name

    inv127 = const("simkernel_q/inv127", np.array(1.0 / 127.0, dtype=np.float32))
    tiny = const("simkernel_q/tiny", np.array(1e-12, dtype=np.float32))
    one = const("simkernel_q/one", np.array(1.0, dtype=np.float32))
    zero_point = const("simkernel_q/zero_point", np.array(128, dtype=np.uint8))
    last_axis = const("simkernel_q/last_axis", np.array([-1], dtype=np.int64))
    zero_point_fill = helper.make_tensor("zero_point_fill", TensorProto.UINT8, [1], [128])
    for node in graph.node:
        weight = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight is None or len(weight.dims) != 2 or node.name in excluded:
            new_nodes.append(node)
            continue
        w = numpy_helper.to_array(weight).astype(np.float32)
        w_scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0
        w_q = np.clip(np.round(w / w_scale), -127, 127).astype(np.int8)
        p = f"simkernel_q/{count}"
        wq_name = const(p + "/w_int8", w_q)
        ws_name = const(p + "/w_scale", w_scale.astype(np.float32))
        x, y = node.input[0], node.output[0]
        if x not in quantized_inputs:  # Q, K and V read the same tensor: quantise it once
            q = f"simkernel_q/x{len(quantized_inputs)}"
            new_nodes += [
                helper.make_node("Abs", [x], [q + "/abs"], name=q + "/Abs"),
                helper.make_node(
                    "ReduceMax", [q + "/abs", last_axis], [q + "/absmax"], name=q + "/ReduceMax", keepdims=1
                ),
                helper.make_node("Max", [q + "/absmax", tiny], [q + "/absmax_safe"], name=q + "/Max"),
                helper.make_node("Mul", [q + "/absmax_safe", inv127], [q + "/x_scale"], name=q + "/Scale"),
                helper.make_node("Shape", [q + "/x_scale"], [q + "/scale_shape"], name=q + "/Shape"),
                helper.make_node(
                    "ConstantOfShape",
                    [q + "/scale_shape"],
                    [q + "/x_zero_point"],
                    name=q + "/ZeroPoint",
                    value=zero_point_fill,
                ),
                # stored as uint8 with zero point 128: onnxruntime's fast (VNNI / AVX2) kernels are u8 x s8
                helper.make_node(
                    "QuantizeLinear",
                    [x, q + "/x_scale", q + "/x_zero_point"],
                    [q + "/x_uint8"],
                    name=q + "/QuantizeLinear",
                    axis=-1,
                    block_size=int(w.shape[0]),
                ),
            ]
            quantized_inputs[x] = (q + "/x_uint8", q + "/x_scale")
        x_uint8, x_scale = quantized_inputs[x]
        new_nodes += [
            helper.make_node(
                "MatMulIntegerToFloat",
                [x_uint8, wq_name, one, ws_name, zero_point],
                [p + "/y_col"],
                name=p + "/MatMulIntegerToFloat",
                domain="com.microsoft",
            ),
            helper.make_node("Mul", [p + "/y_col", x_scale], [y], name=p + "/MulRow"),
        ]
        count += 1
    used = {i for n in new_nodes for i in n.input}
    kept = [i for i in graph.initializer if i.name in used]
    del graph.node[:]
    graph.node.extend(new_nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + [i for i in new_inits if i.name in used])
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return count
