"""What runs in a Spark executor's Python worker: its thread count, its model, its loaded scorers.

- Threads: :func:`task_threads` is ``TaskContext.get().cpus()``, the ``spark.task.cpus`` of the task's
  resource profile (1 unless set), never the host's cores: an executor runs as many tasks at once as it has
  cores / ``spark.task.cpus``, each in its own Python worker, and an onnxruntime session left to its
  default starts one thread per host core in every one of them.
- The model: on the driver, :func:`ship_model` resolves it (a local folder, the store, the hub) and hands its
  bundle to Spark with ``SparkContext.addFile(folder, recursive=True)``. In a worker, :func:`worker_model`
  resolves it without any download; when this node lacks it, it installs the shipped copy
  (``SparkFiles.get``) into the node's store, checked against the bundle's manifest (sizes and SHA-256)
  under the store's lock of that model: the workers of one node wait for the first, and later ones find
  it in the store. A node never needs the hub.
- Loaded scorers: :func:`cached` keeps one per settings in the worker process (Spark reuses Python workers
  across tasks, ``spark.python.worker.reuse``, the default), so the model loads once per worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from simkernel._optional import import_optional
from simkernel.errors import ModelNotFoundError

T = TypeVar("T")

_LOCK = threading.Lock()
_CACHE: dict[tuple, Any] = {}
_SHIPPED: set[tuple[str, str]] = set()  # (Spark application, folder) already added to its files


def pyspark_module(feature: str = "simkernel.spark") -> Any:
    """The pyspark module, or an error naming ``pip install 'simkernel[spark]'``."""
    return import_optional("pyspark", "spark", feature)


def task_threads(default: int = 1) -> int:
    """onnxruntime threads for the current Spark task: ``TaskContext.get().cpus()`` (``spark.task.cpus``),
    at least 1; ``default`` outside a Spark task."""
    pyspark = pyspark_module()
    context = pyspark.TaskContext.get()
    if context is None:
        return default
    return max(1, int(context.cpus()))


def ship_model(model: str, precision: str = "fp32") -> dict[str, str]:
    """(on the driver) Resolve ``model`` here and add its bundle folder to the Spark job's files; returns
    what a worker needs to find it: {"id": the model's id, "name": the folder's name in SparkFiles}.

    Needs an active SparkContext (``SparkSession.builder.getOrCreate()`` first)."""
    from simkernel.ray.shipping import _bundle_on_this_node
    from simkernel.runtime.acquisition.resolve import resolve_model

    context = _active_context()
    resolve_model(model, precision)  # prepares or downloads it here, once, if it has to
    found = _bundle_on_this_node(model, precision)
    if found is None:  # pragma: no cover - resolve_model just found it
        raise ModelNotFoundError(f"{model!r} resolved on the driver but its bundle is not readable")
    folder = Path(found["folder"])
    _add_folder(context, folder)
    return {"id": found["id"], "name": folder.name}


def ship_token_layers(model: str, precision: str = "fp32") -> dict[str, str]:
    """(on the driver) :func:`ship_model` for a metric that runs the model's token layers (BERTScore): the
    token-layers bundle, exported here first if the store lacks it."""
    from simkernel.runtime.acquisition.token_layers import resolve_token_layers
    from simkernel.runtime.store.manifest import read_manifest

    context = _active_context()
    folder = Path(resolve_token_layers(model, precision=precision)).resolve()
    _add_folder(context, folder)
    return {"id": str(read_manifest(folder)["id"]), "name": folder.name, "form": "token-layers"}


def _active_context() -> Any:
    """The active SparkContext, through which a model is shipped; RuntimeError naming the fix if none."""
    context = pyspark_module().SparkContext._active_spark_context
    if context is None:
        raise RuntimeError(
            "simkernel.spark ships the model through the active SparkContext, and there is none: start a SparkSession first (SparkSession.builder.getOrCreate()), or pass ship=False to the UDF when every node has the model"
        )
    return context


def _add_folder(context: Any, folder: Path) -> None:
    """``folder`` added to the Spark application's files, once per application (Spark refuses a second
    ``addFile`` of a folder)."""
    key = (str(context.applicationId), str(folder))
    with _LOCK:
        if key not in _SHIPPED:
            context.addFile(str(folder), recursive=True)
            _SHIPPED.add(key)


def worker_model(model: str, precision: str, shipped: dict[str, str] | None) -> str:
    """(in a worker) What to pass as ``model=`` here: ``model`` when this node has it (no download), else the
    node's store folder of the shipped bundle, installed now; without a shipped bundle, ``model`` as
    given (resolved as everywhere, the hub included)."""
    from simkernel.runtime.acquisition.resolve import resolve_model

    if shipped is None:
        return model
    try:
        if shipped.get("form") == "token-layers":
            from simkernel.runtime.acquisition.token_layers import resolve_token_layers

            resolve_token_layers(model, precision=precision, export=False)
        else:
            resolve_model(model, precision, download=False)
        return model
    except ModelNotFoundError:
        pass
    return str(_install(shipped, precision))


def _install(shipped: dict[str, str], precision: str) -> Path:
    import shutil

    from simkernel.runtime.store import bundles as store
    from simkernel.runtime.store.layout import PRECISIONS

    pyspark = pyspark_module()
    source = Path(pyspark.SparkFiles.get(shipped["name"]))
    model_id = shipped["id"]
    dest = store.model_dir(model_id)
    with store.model_lock(model_id):
        if store.is_installed(model_id) and (dest / PRECISIONS[precision]).is_file():
            return dest  # another worker of this node installed it while we waited for the lock
        if not source.is_dir():
            raise ModelNotFoundError(
                f"the model {model_id!r} is not in this node's store and its shipped copy is missing from SparkFiles ({source}); was the UDF made in this Spark application (it calls SparkContext.addFile)?"
            )
        with store.staged_bundle(model_id, replace=True, check_hashes=True, locked=True) as staging:
            shutil.copytree(source, staging, dirs_exist_ok=True)
    return dest


def cached(key: tuple, build: Callable[[], T]) -> T:
    """The object ``build()`` made for ``key`` in this worker process (built once, under a lock)."""
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = build()
        return _CACHE[key]  # type: ignore[no-any-return]


def loaded() -> list[dict[str, Any]]:
    """The scorers that run a model loaded in this worker process, each as {"kind", "model", "threads": the threads it was
    made with, "intra_op_threads": those its onnxruntime session runs on}: what a check of the thread
    sizing reads (call it from a UDF; in the driver it lists the driver's own)."""
    with _LOCK:
        items = list(_CACHE.items())
    out = []
    for key, scorer in items:
        encoder = getattr(scorer, "runtime_model", scorer)  # a metric's scorer, or an encoder
        if not hasattr(encoder, "_session"):
            continue  # a metric that runs no model (exact, a plugin's): no threads to report
        session = encoder._session  # the OnnxEncoderSession: opens the model if it was not yet
        options = session._session.get_session_options()
        out.append(
            {
                "kind": key[0],
                "model": key[1],
                "threads": key[3],
                "intra_op_threads": options.intra_op_num_threads,
            }
        )
    return out
