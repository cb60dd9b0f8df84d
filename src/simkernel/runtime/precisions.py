"""The precisions a model runs in, and the graph file of the bundle each one runs: the package's one
definition of them (imports nothing, so a settings check costs no numpy or onnxruntime import)."""

from __future__ import annotations

# precision -> the bundle's ONNX file it runs (bf16 runs the fp32 graph on OpenVINO's CPU plugin)
PRECISIONS = {"fp32": "model.onnx", "int8": "model_int8.onnx", "bf16": "model.onnx"}
