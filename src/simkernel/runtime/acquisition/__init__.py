"""Getting a model into the store: the registry of known models, the hub download (published ONNX files, or
a checkpoint exported here), the export of a checkpoint (tracing, graph passes, int8 quantisation, parity),
offline preparation, and name resolution.

Above :mod:`simkernel.runtime.inference` (the parity checks load the bundles they write) and
:mod:`simkernel.runtime.store` (where the bundles go); neither imports it.
"""
