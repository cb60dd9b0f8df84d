"""The model store: where bundles live on disk, and what makes a folder a bundle.

- :mod:`~simkernel.runtime.store.home`: the store's root folder (``$SIMKERNEL_HOME``, else the user's
  cache folder);
- :mod:`~simkernel.runtime.store.bundles`: the store's operations: a model id's folder, the model's lock,
  the staged and verified install of a bundle, keeping some precisions only, the list of stored models;
- :mod:`~simkernel.runtime.store.workdirs`: the work folders a bundle is built in and their atomic rename
  into place (and the leftovers of killed processes);
- :mod:`~simkernel.runtime.store.file_lock`: the cross-process file lock (the store's model locks, the
  disk embedding cache);
- :mod:`~simkernel.runtime.store.manifest`: a bundle's manifest ``simkernel.json``: reading and writing it,
  and checking the bundle's files against it;
- :mod:`~simkernel.runtime.store.layout`: which ONNX file holds each precision, and reading a bundle's JSON
  files;
- :mod:`~simkernel.runtime.store.bundle_digest`: the identity of a bundle for one precision (the disk
  embedding cache's key).

The bottom layer of :mod:`simkernel.runtime`: it imports nothing from
:mod:`~simkernel.runtime.inference` or :mod:`~simkernel.runtime.acquisition` (both use it), nor onnxruntime
or tokenizers (``lint-imports`` checks the layers).
"""
