"""The top-level package: its public names resolve lazily to the classes of the layers below; the
packages with a lazy face of their own use the same one (simkernel._lazy.lazy_face)."""

from __future__ import annotations

import importlib

import pytest

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


# packages whose public names resolve on first access, each through simkernel._lazy.lazy_face
LAZY_PACKAGES = ["simkernel", "simkernel.metrics", "simkernel.calibration", "simkernel.ray"]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_package_faces_are_the_shared_one(package):
    module = importlib.import_module(package)
    assert module.__getattr__.__module__ == module.__dir__.__module__ == "simkernel._lazy"
    assert set(module.__all__) - {"__version__"} == set(module._LAZY)
    assert set(module._LAZY) <= set(dir(module))
    with pytest.raises(AttributeError, match=f"^module '{package}' has no attribute 'NoSuchThing'$"):
        module.NoSuchThing  # noqa: B018


def test_calibration_names_are_the_objects_of_their_modules():
    import simkernel.calibration as calibration

    for name, module in calibration._LAZY.items():
        assert getattr(calibration, name) is getattr(importlib.import_module(module), name)
