"""Haystack's own tests of the two evaluators, run against simkernel (tests/peer/README.md).

``test_haystack_sas_evaluator.py`` and ``test_haystack_answer_exact_match.py`` are Haystack's
``test/components/evaluators/test_sas_evaluator.py`` and ``test_answer_exact_match.py`` (deepset-ai/haystack,
Apache-2.0, commit c7cb46c0f28ad1984f60e5d3e9404b124a221437), renamed only so that their names do not clash
with tests/components. Their text is Haystack's, import lines included, except one commented expectation
(the serialised ``type``, the one divergence; ``test_vendored_haystack_tests.py`` checks that nothing else
differs). What changes the import is :class:`VendoredModule`: it imports those two modules with simkernel's
evaluator modules standing in ``sys.modules`` for Haystack's, so ``from haystack.components.evaluators
import AnswerExactMatchEvaluator`` gives simkernel's class while every other Haystack import (the
``ComponentDevice`` the tests build) stays Haystack's.

With ``SIMKERNEL_TESTS_HIDE_HAYSTACK=1`` in the environment, Haystack cannot be imported at all in this test
run (as if it were not installed) and ``haystack.utils.device`` is simkernel's ``components.device``: the same
tests then check simkernel's own ``ComponentDevice``.

The two tests marked ``integration`` download two tiny models from the Hugging Face hub
(``sentence-transformers-testing/stsb-bert-tiny-safetensors``,
``cross-encoder-testing/reranker-bert-tiny-gooaq-bce``). The build and CI machines have no access to the hub,
so they cannot be downloaded there: those tests are skipped with that reason, and run by themselves wherever
the hub (``HF_ENDPOINT``, default huggingface.co) answers and ``HF_HUB_OFFLINE`` is not set. The two repos
publish checkpoints only: simkernel exports them into its store on first use (needs the export extra).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.abc
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
VENDORED = ("test_haystack_sas_evaluator.py", "test_haystack_answer_exact_match.py")
HIDE_HAYSTACK = os.environ.get("SIMKERNEL_TESTS_HIDE_HAYSTACK") == "1"
# Haystack's module -> simkernel's module standing in for it while a vendored test module is imported
STAND_INS = {
    "haystack.components.evaluators": "simkernel.components.evaluators",
    "haystack.components.evaluators.sas_evaluator": "simkernel.components.evaluators.sas_evaluator",
    "haystack.components.evaluators.answer_exact_match": "simkernel.components.evaluators.answer_exact_match",
}
if HIDE_HAYSTACK:
    STAND_INS["haystack.utils.device"] = "simkernel.components.device"
HUB_MODELS = ("sentence-transformers-testing/stsb-bert-tiny-safetensors",)


class _NoHaystack(importlib.abc.MetaPathFinder):
    """Makes ``import haystack`` fail as if haystack-ai were not installed."""

    def find_spec(self, name, path, target=None):
        if name == "haystack" or name.startswith("haystack."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden by SIMKERNEL_TESTS_HIDE_HAYSTACK=1)")
        return None


if HIDE_HAYSTACK:
    if any(name == "haystack" or name.startswith("haystack.") for name in sys.modules):
        raise RuntimeError("SIMKERNEL_TESTS_HIDE_HAYSTACK=1 but haystack was imported before this conftest")
    sys.meta_path.insert(0, _NoHaystack())


@contextlib.contextmanager
def simkernel_in_place_of_haystack() -> Iterator[None]:
    """Within the block, importing a module of :data:`STAND_INS` gives simkernel's module; restored after."""
    saved = {name: sys.modules.get(name) for name in STAND_INS}
    try:
        for name, stand_in in STAND_INS.items():
            sys.modules[name] = importlib.import_module(stand_in)
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


class VendoredModule(pytest.Module):
    """A vendored Haystack test module, imported with simkernel's evaluators in place of Haystack's."""

    def _getobj(self):
        with simkernel_in_place_of_haystack():
            return super()._getobj()


def pytest_pycollect_makemodule(module_path, parent):
    if module_path.parent == HERE and module_path.name in VENDORED:
        return VendoredModule.from_parent(parent, path=module_path)
    return None


@functools.lru_cache(maxsize=1)
def hub_unreachable() -> str | None:
    """Why the hub cannot be used from here, or ``None`` when it answers."""
    if (os.environ.get("HF_HUB_OFFLINE") or "").lower() in ("1", "on", "yes", "true"):
        return "HF_HUB_OFFLINE is set"
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    request = urllib.request.Request(f"{endpoint}/api/models/{HUB_MODELS[0]}", method="HEAD")
    try:
        urllib.request.urlopen(request, timeout=10).close()
    except urllib.error.HTTPError:
        return None  # it answered
    except (urllib.error.URLError, OSError) as exc:
        return f"the Hugging Face hub ({endpoint}) is not reachable from here: {exc}"
    return None


@pytest.fixture(autouse=True)
def _hub_for_integration_tests(request):
    if request.node.get_closest_marker("integration") is not None:
        reason = hub_unreachable()
        if reason is not None:
            pytest.skip(f"needs models downloaded from the Hugging Face hub, and {reason}")


# Haystack's fixture of the same name (deepset-ai/haystack test/conftest.py, Apache-2.0), used by the
# integration tests.
@pytest.fixture
def del_hf_env_vars(monkeypatch):
    """
    Delete Hugging Face environment variables for tests.

    Prevents passing empty tokens to Hugging Face, which would cause API calls to fail.
    This is particularly relevant for PRs opened from forks, where secrets are not available
    and empty environment variables might be set instead of being removed.

    See https://github.com/deepset-ai/haystack/issues/8811 for more details.
    """
    monkeypatch.delenv("HF_API_TOKEN", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
