"""Loading an onnxruntime-optimised ONNX graph into OpenVINO correctly, and checking that it was.

simkernel's bundles hold graphs already optimised by onnxruntime (``graph_optimization: "extended"``), so
they contain onnxruntime's contrib operators (``com.microsoft`` domain: ``FusedMatMul``, ``BiasGelu``,
``FusedGemm`` ...). OpenVINO's ONNX frontend reads them, but its ``FusedGemm`` knows only the Relu and
LeakyRelu activations, so the ``Tanh`` of a BERT pooler (every BERT cross-encoder) came out wrong (a test
cross-encoder's first logit 0.72 where onnxruntime gives 3.44; openvino 2026.4).
:func:`conversion_extensions` replaces that translator with one that follows onnxruntime's definition, and
:func:`conversion_error` compares a compiled graph with onnxruntime on a small token batch, so a conversion
OpenVINO gets wrong is refused at load instead of giving silently wrong numbers.
"""

from __future__ import annotations

import numpy as np

# relative L2 error of the compiled graph against onnxruntime fp32 on the probe batch, above which the
# conversion is refused: f32 differs by rounding only (measured ~1e-6); bf16 by its 8-bit mantissa
# (measured ~1e-2 on a bf16 CPU for all-MiniLM-L6-v2); a wrong operator is off by ~100%
CONVERSION_TOLERANCE = {"f32": 1e-3, "bf16": 0.1}


def _fused_gemm(node):
    """onnxruntime's ``com.microsoft::FusedGemm``: ``activation(alpha * A' @ B' + beta * C)``."""
    from openvino import opset13 as ops

    a, b = node.get_input(0), node.get_input(1)
    alpha = float(node.get_attribute("alpha", 1.0))
    beta = float(node.get_attribute("beta", 1.0))
    out = ops.matmul(a, b, bool(node.get_attribute("transA", 0)), bool(node.get_attribute("transB", 0)))
    if alpha != 1.0:
        out = ops.multiply(out, ops.constant(np.float32(alpha)))
    if node.get_input_size() > 2:
        bias = node.get_input(2)
        if beta != 1.0:
            bias = ops.multiply(bias, ops.constant(np.float32(beta)))
        out = ops.add(out, bias)
    activation = str(node.get_attribute("activation", ""))
    if activation == "LeakyRelu":
        slope = float(node.get_attribute("activation_alpha", node.get_attribute("leaky_relu_alpha", 0.01)))
        out = ops.prelu(out, ops.constant(np.float32(slope)))
    elif activation:
        functions = {"Relu": ops.relu, "Tanh": ops.tanh, "Sigmoid": ops.sigmoid}
        if activation not in functions:
            raise ValueError(f"FusedGemm activation {activation!r} is not supported")
        out = functions[activation](out)
    return [out.output(0)]


def conversion_extensions() -> list:
    """OpenVINO ONNX-frontend extensions to register on a ``Core`` before reading a bundle's graph."""
    from openvino.frontend.onnx import ConversionExtension

    return [ConversionExtension("FusedGemm", "com.microsoft", _fused_gemm)]


def probe_batch() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two rows of 16 token ids (valid in any vocabulary of 2,000+ entries), the second padded after 9."""
    ids = (1000 + (np.arange(32, dtype=np.int64) * 37) % 997).reshape(2, 16)
    ids[:, 0] = 101
    mask = np.ones_like(ids)
    mask[1, 9:] = 0
    ids[1, 9:] = 0
    return ids, mask, np.zeros_like(ids)


def conversion_error(run, path, output_name: str) -> float:
    """Relative L2 error (over the real, unpadded positions) of ``run`` (a compiled graph's run) against
    onnxruntime fp32 on the same graph, on :func:`probe_batch`."""
    from simkernel.runtime.inference.session import OnnxEncoderSession

    batch = probe_batch()
    reference = OnnxEncoderSession(path, (output_name,), threads=1).run(*batch).astype(np.float64)
    got = run(*batch).astype(np.float64)
    if got.shape != reference.shape:
        return float("inf")
    if got.ndim == 3:  # token embeddings: padded positions are never pooled
        keep = batch[1].astype(bool)
        got, reference = got[keep], reference[keep]
    scale = max(float(np.linalg.norm(reference)), 1e-12)
    return float(np.linalg.norm(got - reference) / scale)
