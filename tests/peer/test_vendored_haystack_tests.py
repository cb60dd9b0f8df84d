"""The vendored Haystack tests are Haystack's, test simkernel, and pass with Haystack installed or not.

- The files are byte for byte Haystack's at the recorded commit once the one commented divergence is undone
  (git blob ids of deepset-ai/haystack c7cb46c0f28ad1984f60e5d3e9404b124a221437).
- Imported as the conftest imports them, their evaluator classes are simkernel's and everything else they
  import from Haystack is Haystack's: the shim cannot make them test Haystack itself, or test nothing.
- In a fresh pytest run where haystack cannot be imported (``SIMKERNEL_TESTS_HIDE_HAYSTACK=1``) the same
  unit tests pass, on simkernel's own ``ComponentDevice``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.peer.conftest import HERE, HIDE_HAYSTACK, VENDORED, simkernel_in_place_of_haystack

REPO = HERE.parents[1]
HAYSTACK_COMMIT = "c7cb46c0f28ad1984f60e5d3e9404b124a221437"
# vendored file -> (Haystack's path, git blob id of Haystack's file at HAYSTACK_COMMIT)
UPSTREAM = {
    "test_haystack_sas_evaluator.py": (
        "test/components/evaluators/test_sas_evaluator.py",
        "141f43fdb2b2a04f14000ac7ba030c6a67df6174",
    ),
    "test_haystack_answer_exact_match.py": (
        "test/components/evaluators/test_answer_exact_match.py",
        "581ef9742e0c270d3e9f252852b48bdfe0ba8306",
    ),
}
# The one divergence: Haystack's expected "type" line, replaced by a commented simkernel one.
DIVERGENCE = re.compile(
    r"( *)# simkernel: the one expected divergence.*?\n(?:\1#.*\n)*?\1# (\"type\": \"haystack\.[^\n]*)\n"
    r"\1\"type\": \"simkernel\.components\.evaluators\.sas_evaluator\.SASEvaluator\",\n"
)


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_upstream_table_names_every_vendored_file():
    assert set(UPSTREAM) == set(VENDORED) == {p.name for p in HERE.glob("test_haystack_*.py")}


@pytest.mark.parametrize("name", VENDORED)
def test_vendored_file_is_haystacks_except_the_one_commented_divergence(name):
    text = (HERE / name).read_text(encoding="utf-8")
    undone, count = DIVERGENCE.subn(lambda m: f"{m.group(1)}{m.group(2)}\n", text)
    assert count == (1 if name == "test_haystack_sas_evaluator.py" else 0)
    path, blob = UPSTREAM[name]
    assert git_blob_id(undone.encode("utf-8")) == blob, f"{name} differs from Haystack's {path}"
    assert undone.startswith("# SPDX-FileCopyrightText: 2022-present deepset GmbH")
    assert "SPDX-License-Identifier: Apache-2.0" in undone.splitlines()[2]


@pytest.mark.parametrize("name", VENDORED)
def test_vendored_modules_test_simkernels_evaluators(name):
    from simkernel.components import device
    from simkernel.components.evaluators import AnswerExactMatchEvaluator, SASEvaluator

    spec = importlib.util.spec_from_file_location(f"_vendored_{name[:-3]}", HERE / name)
    module = importlib.util.module_from_spec(spec)
    with simkernel_in_place_of_haystack():
        spec.loader.exec_module(module)
    if name == "test_haystack_sas_evaluator.py":
        assert module.SASEvaluator is SASEvaluator
        if HIDE_HAYSTACK:
            assert module.ComponentDevice is device.ComponentDevice
        else:
            from haystack.utils.device import ComponentDevice

            assert module.ComponentDevice is ComponentDevice  # Haystack's own, passed to simkernel
    else:
        assert module.AnswerExactMatchEvaluator is AnswerExactMatchEvaluator
    # after the import, Haystack's modules are Haystack's again (or absent)
    for haystack_name in ("haystack.components.evaluators", "haystack.components.evaluators.sas_evaluator"):
        assert not getattr(sys.modules.get(haystack_name), "__name__", "haystack").startswith("simkernel")


@pytest.mark.skipif(HIDE_HAYSTACK, reason="this is the run that starts the run without Haystack")
def test_haystacks_unit_tests_pass_without_haystack_installed():
    env = dict(os.environ, SIMKERNEL_TESTS_HIDE_HAYSTACK="1")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH")) if p
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not integration",
            *(str(HERE / name) for name in VENDORED),
            str(Path(__file__)),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    # 6 + 5 of Haystack's unit tests, and this module's checks (this one skipped)
    summary = proc.stdout.strip().splitlines()[-1]
    assert re.match(r"^16 passed, 1 skipped, 2 deselected in ", summary), summary
