"""onnxruntime's dynamic int8 quantisation, for the studies only: simkernel never ships it.

``quantize_dynamic`` computes one activation scale per tensor at run time, over every token of every text
in the batch, so a text's embedding depends on its batch-mates (int8_study.py measures by how much). The
studies compare it with simkernel's per-row int8 (``simkernel.runtime`` quantisation) for speed and
accuracy; ceiling.py times it as the fastest int8 graph onnxruntime offers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

METHODS = ("dynamic", "dynamic-per-channel")


def quantize_dynamic_int8(
    src: str | Path, dst: str | Path, method: str = "dynamic", exclude_nodes: Iterable[str] = ()
) -> dict:
    """Write onnxruntime's dynamic int8 version of the fp32 graph ``src`` to ``dst`` (int8 weights per
    tensor, or per output channel for ``"dynamic-per-channel"``; uint8 activations with one scale per
    tensor); returns a description like simkernel's manifest entries."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    per_channel = method == "dynamic-per-channel"
    quantize_dynamic(
        str(src),
        str(dst),
        per_channel=per_channel,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        nodes_to_exclude=list(exclude_nodes),
        # a pre-optimised graph holds contrib operators that ONNX shape inference cannot type
        extra_options={"DefaultTensorType": TensorProto.FLOAT},
    )
    return {
        "method": method,
        "weights": "int8 per channel" if per_channel else "int8 per tensor",
        "activations": "uint8 dynamic per tensor (whole batch)",
        "batch_independent": False,
    }
