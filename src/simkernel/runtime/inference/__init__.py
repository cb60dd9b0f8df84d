"""Running a model from its bundle folder: tokenizer, onnxruntime session (OpenVINO for bf16), pooling,
inputs, batching, the embedding caches, the model's configuration, bundle reading, and the encoder cores
over a folder.

Between :mod:`simkernel.runtime.acquisition` and :mod:`simkernel.runtime.store`: it checks a bundle
against its manifest (store) but never resolves a model name, downloads or exports, and imports nothing
from acquisition (``lint-imports`` checks it).
"""
