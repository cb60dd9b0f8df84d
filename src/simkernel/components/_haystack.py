"""Haystack's component protocol, implemented without importing haystack.

Haystack 3.4 recognises a component by duck typing (read from ``haystack/core/pipeline/base.py`` and
``haystack/core/component/component.py``):

- ``Pipeline.add_component`` checks ``isinstance(instance, Component)`` (a runtime-checkable Protocol that
  only needs ``run``), then reads ``instance.__haystack_input__._sockets_dict`` and
  ``instance.__haystack_output__._sockets_dict`` and sets ``__haystack_added_to_pipeline__`` and
  ``__component_name__`` on the instance;
- ``Pipeline.run`` / ``AsyncPipeline`` read ``__haystack_supports_async__``;
- ``Pipeline.from_dict`` / ``loads`` look the serialised ``type`` string up in
  ``haystack.core.component.component.component.registry`` (importing the module once if it is missing).

Haystack's ``@component`` decorator provides all of that, but using it means importing haystack, which
imports torch whenever torch is installed (seconds). :func:`haystack_component` provides the same
attributes lazily instead:

- the sockets are real ``haystack`` ``Sockets`` of ``InputSocket`` / ``OutputSocket``, built from the
  signature of ``run`` and the types given to :func:`output_types` the first time Haystack reads them
  (Haystack is imported by then, since Haystack is the one asking);
- the class is entered in Haystack's component registry as soon as Haystack's component module exists:
  at once when it is already imported, otherwise by a one-shot import hook that runs right after
  ``haystack.core.component.component`` is first imported, and removes itself. It is entered under its
  ``type`` string, and under the ones it was saved under before it moved
  (:data:`~simkernel.components.serialization.MOVED_TYPES`).

Every Haystack component of :mod:`simkernel.components` (evaluators, embedders, rankers) is made one this
way. ``import simkernel.components`` therefore never imports haystack, and when haystack is not installed
the evaluators are plain Python classes that work the same (the embedders and the ranker need haystack's
``Document``, so they import it).
"""

from __future__ import annotations

import importlib.abc
import inspect
import sys
import threading
import typing
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from simkernel.components.serialization import MOVED_TYPES, check_type

HAYSTACK_COMPONENT_MODULE = "haystack.core.component.component"

_T = TypeVar("_T", bound=type)
_F = TypeVar("_F", bound=Callable[..., Any])
_C = TypeVar("_C")

_lock = threading.Lock()
_registered: list[type] = []  # every class made a component, in definition order
_hook: _RegisterOnImport | None = None


def output_types(**types: Any) -> Callable[[_F], _F]:
    """Declare the output sockets of ``run`` / ``run_async`` (``@component.output_types`` of Haystack)."""

    def decorate(method: _F) -> _F:
        if method.__name__ not in ("run", "run_async"):
            raise TypeError("output_types can only decorate 'run' and 'run_async'")
        method._simkernel_output_types = dict(types)  # type: ignore[attr-defined]
        return method

    return decorate


class _LazySockets:
    """Non-data descriptor: builds the instance's Haystack ``Sockets`` on first read, then caches them.

    Being a non-data descriptor, the value stored in the instance ``__dict__`` wins afterwards, so Haystack
    may also assign the attribute itself (``component.set_input_types``) as it does for its own components.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.attribute = f"__haystack_{kind}__"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        sockets = _build_sockets(instance, self.kind)
        instance.__dict__[self.attribute] = sockets
        return sockets


def _run_parameters(method: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    """(name, resolved type, default or inspect.Parameter.empty) of each named parameter of ``method``."""
    hints = typing.get_type_hints(method)
    out = []
    for name, param in inspect.signature(method).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        out.append((name, hints.get(name, Any), param.default))
    return out


def _build_sockets(instance: Any, kind: str) -> Any:
    from haystack.core.component.sockets import Sockets
    from haystack.core.component.types import InputSocket, OutputSocket

    cls = type(instance)
    _register_now(cls)  # Haystack is imported: make sure loads() can find the class as well
    if kind == "input":
        sockets: dict[str, Any] = {}
        for name, type_, default in _run_parameters(cls.run):
            kwargs = {} if default is inspect.Parameter.empty else {"default_value": default}
            sockets[name] = InputSocket(name=name, type=type_, **kwargs)
        return Sockets(instance, sockets, InputSocket)
    types = cls.run._simkernel_output_types
    return Sockets(
        instance, {name: OutputSocket(name=name, type=t) for name, t in types.items()}, OutputSocket
    )


def haystack_component(cls: _T) -> _T:
    """Make ``cls`` a Haystack component (usable in ``haystack.Pipeline``) without importing haystack.

    ``cls`` needs a ``run`` method decorated with :func:`output_types`; an optional ``run_async`` must be a
    coroutine function with the same parameters and output types (Haystack enforces the same rules).
    """
    run = getattr(cls, "run", None)
    if run is None or not hasattr(run, "_simkernel_output_types"):
        raise TypeError(f"{cls.__name__}.run must exist and be decorated with @output_types(...)")
    run_async = getattr(cls, "run_async", None)
    if run_async is not None:
        if not inspect.iscoroutinefunction(run_async):
            raise TypeError(f"{cls.__name__}.run_async must be a coroutine function")
        if _run_parameters(run_async) != _run_parameters(run):
            raise TypeError(f"{cls.__name__}.run and run_async must have the same parameters")
        if getattr(run_async, "_simkernel_output_types", None) != run._simkernel_output_types:
            raise TypeError(f"{cls.__name__}.run and run_async must declare the same output types")
    cls.__haystack_input__ = _LazySockets("input")  # type: ignore[attr-defined]
    cls.__haystack_output__ = _LazySockets("output")  # type: ignore[attr-defined]
    cls.__haystack_added_to_pipeline__ = None  # type: ignore[attr-defined]
    cls.__haystack_supports_async__ = run_async is not None  # type: ignore[attr-defined]
    with _lock:
        _registered.append(cls)
    module = sys.modules.get(HAYSTACK_COMPONENT_MODULE)
    if module is not None and hasattr(module, "component"):
        _register_in(module)
    else:
        _install_hook()
    return cls


def registry_key(cls: type) -> str:
    """The ``type`` string Haystack serialises ``cls`` under (``module.ClassName``)."""
    return f"{cls.__module__}.{cls.__name__}"


def registry_keys(cls: type) -> tuple[str, ...]:
    """Every ``type`` string that names ``cls``: :func:`registry_key`, then those it was saved under before
    it moved (:data:`~simkernel.components.serialization.MOVED_TYPES`)."""
    key = registry_key(cls)
    return (key, *(old for old, new in MOVED_TYPES.items() if new == key))


def component_from_dict(cls: type[_C], data: dict[str, Any]) -> _C:
    """``cls`` rebuilt from ``{"type": ..., "init_parameters": {...}}`` as Haystack's ``default_from_dict``
    does (same errors), accepting every type string of :func:`registry_keys`, with Haystack's pre-init
    hook run (:func:`run_pre_init_hook`)."""
    check_type(data, cls, registry_keys(cls))
    init_parameters = dict(data.get("init_parameters", {}))
    run_pre_init_hook(cls, init_parameters)
    return cls(**init_parameters)


def _register_in(module: ModuleType) -> None:
    registry = module.component.registry
    with _lock:
        classes = list(_registered)
    for cls in classes:
        for key in registry_keys(cls):
            registry[key] = cls


def _register_now(cls: type) -> None:
    module = sys.modules.get(HAYSTACK_COMPONENT_MODULE)
    if module is not None and hasattr(module, "component"):
        for key in registry_keys(cls):
            module.component.registry[key] = cls


def run_pre_init_hook(cls: type, init_parameters: dict[str, Any]) -> None:
    """Run Haystack's component pre-init hook, if one is active, on ``init_parameters`` (in place).

    ``Pipeline.from_dict(..., callbacks=DeserializationCallbacks(component_pre_init=...))`` lets users edit
    a component's init parameters before it is built; Haystack's metaclass calls that hook, and this is
    the same call for classes made components by :func:`haystack_component`. No-op without haystack.
    """
    module = sys.modules.get(HAYSTACK_COMPONENT_MODULE)
    context_var = getattr(module, "_COMPONENT_PRE_INIT_HOOK", None) if module is not None else None
    payload = context_var.get() if context_var is not None else None
    if payload is None or payload.in_progress:
        return
    try:
        payload.in_progress = True
        payload.callback(cls, init_parameters)
    finally:
        payload.in_progress = False


class _RegisteringLoader(importlib.abc.Loader):
    """Wraps the loader of Haystack's component module: runs it, then registers simkernel's classes."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _register_in(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, is_package, ... of the real loader
        return getattr(self._loader, name)


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """One-shot import hook for :data:`HAYSTACK_COMPONENT_MODULE`; finds it with the other finders."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != HAYSTACK_COMPONENT_MODULE:
            return None
        _remove_hook()
        for finder in list(sys.meta_path):
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RegisteringLoader(spec.loader)
                return spec
        return None


def _install_hook() -> None:
    global _hook
    with _lock:
        if _hook is None:
            _hook = _RegisterOnImport()
            sys.meta_path.insert(0, _hook)


def _remove_hook() -> None:
    global _hook
    with _lock:
        if _hook is not None and _hook in sys.meta_path:
            sys.meta_path.remove(_hook)
        _hook = None
