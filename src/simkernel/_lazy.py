"""The lazy package face shared by ``simkernel`` and its packages ``runtime``, ``metrics``, ``calibration``,
``ray`` and ``spark``: :func:`lazy_face`.

A package lists its public names and the module defining each; a name's module is imported on first
access (then the value is cached in the package), so importing the package itself stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_face(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` for ``names`` (public name ->
    module defining it); ``namespace`` is the package's ``globals()``, where resolved values are cached.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
