"""The CPUs Ray gave the current actor or task, and the ray module itself (imported lazily)."""

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
