"""The CPUs Ray gave the current actor or task, the actor pool that fits the cluster, and the ray module
itself (imported lazily)."""

from __future__ import annotations

from types import ModuleType

from simkernel._optional import import_optional


def ray_module(feature: str = "running on a Ray cluster") -> ModuleType:
    """The ray module, or an error naming ``pip install 'simkernel[ray]'``."""
    return import_optional("ray", "ray", feature)


def actor_threads(default: int = 1) -> int:
    """onnxruntime threads for this actor: the whole CPUs Ray assigned to it (``num_cpus``), at least 1.

    Outside a Ray worker (or with no CPU assigned, e.g. ``num_cpus=0``) returns ``default``. Never the
    host's core count: Ray packs several actors on a host, and each onnxruntime session would otherwise
    start one thread per host core.
    """
    import sys

    if "ray" not in sys.modules:  # not in a Ray process: nothing assigned
        return default
    ray = ray_module()
    if not ray.is_initialized():
        return default
    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 0.0)
    return max(1, int(cpus)) if cpus else default


PIPELINE_TASK_CPUS = 1  # CPUs a Ray Data pipeline's read and write tasks need beside its actors (1 each)


def pool_size(num_cpus: int = 1, size: int | None = None) -> int:
    """The actors of ``num_cpus`` CPUs each that a Ray Data pipeline can run on the connected cluster (``ray``
    is initialised if it is not): its CPUs, less ``PIPELINE_TASK_CPUS`` for the read and write tasks, at
    least 1. With ``size``, checks that a pool of ``size`` fits and returns it; a ValueError names the CPUs
    asked and available otherwise (Ray would start the actors that fit and wait for the others for ever,
    the read never finishing: a 2-CPU machine fits 1 actor of 1 CPU).

    For ``map_batches(..., compute=ActorPoolStrategy(size=pool_size()), num_cpus=1)``."""
    if num_cpus < 1:
        raise ValueError(f"num_cpus must be at least 1 CPU per actor, got {num_cpus!r}")
    ray = ray_module()
    if not ray.is_initialized():
        ray.init()
    cluster_cpus = int(ray.cluster_resources().get("CPU", 0))
    fits = max(1, (cluster_cpus - PIPELINE_TASK_CPUS) // num_cpus)
    if size is None:
        return fits
    if size > fits:
        raise ValueError(
            f"an actor pool of {size} x {num_cpus} CPU needs {size * num_cpus} CPUs, and the pipeline's read and write tasks {PIPELINE_TASK_CPUS} more; the Ray cluster has {cluster_cpus}: Ray would wait for the actors that do not fit for ever. Use size={fits} (pool_size(num_cpus={num_cpus})) or add nodes"
        )
    return size
