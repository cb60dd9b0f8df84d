"""The plugin's registration: the ``pytest11`` entry point named ``simkernel`` in pyproject.toml and in the
installed metadata, pytest loading it by itself, ``-p no:simkernel`` turning it off, and its import
staying light (nothing heavy is imported until a test uses the fixture).

The installed metadata is what pytest reads: after pulling a change to the entry points, refresh an
editable install (``pip install -e . --no-deps``); the tests below say so when it is stale.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest
import tomllib
from tests.cli.conftest import REPO

pytest_plugins = ["pytester"]

STALE = "the installed simkernel metadata lacks the pytest11 entry point; run `pip install -e . --no-deps`"


def test_pyproject_declares_the_entry_point():
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {"simkernel": "simkernel.pytest_plugin"}


def test_installed_metadata_has_the_entry_point():
    found = [ep for ep in metadata.entry_points(group="pytest11") if ep.name == "simkernel"]
    assert [ep.value for ep in found] == ["simkernel.pytest_plugin"], STALE
    assert found[0].dist is not None and found[0].dist.name == "simkernel"


@pytest.fixture
def fixture_test(store_env, pytester):
    pytester.makepyfile(
        """
        def test_uses_the_fixture(semantic):
            assert semantic.similar("Paris is the capital of France.", "France's capital is Paris.")
        """
    )
    return pytester


def test_pytest_loads_the_plugin_through_the_entry_point(fixture_test):
    assert [ep for ep in metadata.entry_points(group="pytest11") if ep.name == "simkernel"], STALE
    result = fixture_test.runpytest_subprocess("-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=1)
    assert any(line.startswith("simkernel semantic: 1 comparison") for line in result.outlines)


def test_no_simkernel_turns_it_off(fixture_test):
    assert [ep for ep in metadata.entry_points(group="pytest11") if ep.name == "simkernel"], STALE
    result = fixture_test.runpytest_subprocess("-p", "no:simkernel", "-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(errors=1)
    assert "fixture 'semantic' not found" in result.stdout.str()
    assert not any(line.startswith("simkernel semantic:") for line in result.outlines)


def test_loading_the_plugin_imports_nothing_heavy():
    heavy = ("numpy", "onnxruntime", "tokenizers", "simkernel.runtime.inference", "simkernel.kernels")
    code = (
        "import sys, pytest, simkernel.pytest_plugin\n"
        f"heavy = {heavy!r}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
