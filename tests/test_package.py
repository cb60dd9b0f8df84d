"""The top-level package: its public names resolve lazily to the classes of the layers below."""

from __future__ import annotations

import importlib

import simkernel


def test_all_lists_exactly_the_lazy_names():
    assert set(simkernel.__all__) == {"__version__", *simkernel._LAZY}


def test_every_public_name_is_the_object_of_its_module():
    for name, module in simkernel._LAZY.items():
        assert getattr(simkernel, name) is getattr(importlib.import_module(module), name)


def test_unknown_attribute_is_an_attribute_error():
    try:
        simkernel.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("simkernel.NoSuchThing did not raise AttributeError")
