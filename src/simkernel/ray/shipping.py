"""Getting a model onto a Ray node that lacks it: from another node of the cluster, through the object store.

:func:`ensure_model` runs in an actor's ``__init__``. It resolves the model as usual (a local folder,
this node's store, the hub: :func:`simkernel.runtime.resolve_model`); when that fails, it asks every other
alive node, with a zero-CPU task pinned to it, whether the node has the bundle without downloading
anything (``resolve_model(..., download=False)``). From the first that has it, each file of the bundle
comes over as one object of Ray's object store (so memory holds one file at a time, and no object is
larger than the bundle's largest file), written into a staging folder of this node's store, checked
against the bundle's manifest (sizes and SHA-256) and renamed into place, all under the store's lock of
that model: actors starting together on one node wait for the first, and the bundle crosses the network
once per node.

The bundle is installed under the model's id (a local folder under ``local/<name>-<hash>``), so later
actors on that node find it in the store like any prepared model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from simkernel.errors import ModelNotFoundError
from simkernel.ray.resources import ray_module


def _bundle_on_this_node(model: str, precision: str) -> dict[str, Any] | None:
    """(runs on the node asked) {"id", "folder", "files": [relative paths]} of the model's bundle on this
    node without any download, or None."""
    from simkernel.runtime.acquisition.registry import canonical_id
    from simkernel.runtime.acquisition.resolve import local_export_id, resolve_model
    from simkernel.runtime.store import bundles as store

    try:
        folder = resolve_model(model, precision, download=False)
    except (ModelNotFoundError, OSError, ValueError):
        return None
    if Path(model).expanduser().is_dir():
        model_id = local_export_id(Path(model).expanduser())
    else:
        model_id = canonical_id(model)
    store.model_dir(model_id)  # a valid id, or an error here rather than on the receiving node
    files = sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file())
    return {"id": model_id, "folder": str(folder), "files": files}


def _read_file(folder: str, name: str) -> bytes:
    """(runs on the node that has the bundle) the bytes of one of its files."""
    return (Path(folder) / name).read_bytes()


def ensure_model(model: str, precision: str = "fp32", ship_model: bool = True) -> str:
    """What to pass as ``model=`` on this node: ``model`` itself when it resolves here, else the store
    folder of the bundle fetched from another node (see the module docstring).

    Raises the usual :class:`~simkernel.errors.ModelNotFoundError` when no node has it (or
    ``ship_model=False``), with the nodes asked added to the message.
    """
    from simkernel.runtime.acquisition.resolve import resolve_model

    try:
        resolve_model(model, precision)
        return model
    except ModelNotFoundError as exc:
        if not ship_model:
            raise
        error = exc
    shipped = _fetch_from_cluster(model, precision)
    if shipped is None:
        raise ModelNotFoundError(
            f"{error}\nNo other node of the Ray cluster has it either (asked every alive node); prepare it on the driver's node (simkernel models prepare ID) and run again."
        ) from None
    return shipped


def _fetch_from_cluster(model: str, precision: str) -> str | None:
    ray = ray_module()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n["NodeID"] != here]
    probe = ray.remote(num_cpus=0)(_bundle_on_this_node)
    answers = ray.get(
        [
            probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
                model, precision
            )
            for node in nodes
        ]
    )
    for node, found in zip(nodes, answers, strict=True):
        if found is not None:
            return str(_install(ray, node, found, precision))
    return None


def _install(ray: Any, node: str, found: dict[str, Any], precision: str) -> Path:
    """Copy the bundle ``found`` on ``node`` into this node's store, once (under the model's lock)."""
    import shutil

    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from simkernel.runtime.store import bundles as store
    from simkernel.runtime.store.layout import PRECISIONS

    model_id = found["id"]
    dest = store.model_dir(model_id)
    with store.model_lock(model_id):
        if store.is_installed(model_id) and (dest / PRECISIONS[precision]).is_file():
            return dest  # another actor of this node shipped it while we waited for the lock
        read = ray.remote(num_cpus=0)(_read_file).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
        )
        staging = store.new_staging_dir(model_id)
        try:
            for name in found["files"]:
                data = ray.get(read.remote(found["folder"], name))
                target = staging / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                del data
            store.verify_bundle(staging, check_hashes=True)
            return store.publish_staging(staging, model_id, replace=True)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
