"""Running a bundle folder: tokenizer, onnxruntime session, pooling, inputs, the embedding cache, the
model's configuration, bundle reading, and the encoder cores over a folder.

The lower layer of :mod:`simkernel.runtime`: it never resolves a model name, downloads or exports, and
imports nothing from :mod:`simkernel.runtime.acquisition` (``lint-imports`` checks it).
"""
