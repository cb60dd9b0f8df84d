"""Getting a bundle folder: the registry of known models, the local store, the hub download, the export
of a checkpoint (tracing, graph passes, int8 quantisation, parity), offline preparation, and name
resolution.

The upper layer of :mod:`simkernel.runtime`: it may use :mod:`simkernel.runtime.inference` (the parity
checks load the bundles they write), which never imports it.
"""
