"""Each adapter, where its tool is not importable, fails at import with one line naming its extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

ADAPTERS = [
    ("simkernel.integrations.langchain", "langchain_core", "langchain"),
    ("simkernel.integrations.llama_index", "llama_index", "llamaindex"),
    ("simkernel.integrations.haystack", "haystack", "haystack"),
    ("simkernel.components.embedders", "haystack", "haystack"),
    ("simkernel.components.rankers", "haystack", "haystack"),
    ("simkernel.integrations.ragas", "ragas", "ragas"),
    ("simkernel.integrations.deepeval", "deepeval", "deepeval"),
    ("simkernel.integrations.mlflow", "mlflow", "mlflow"),
]

CODE = """
import sys
sys.modules[{blocked!r}] = None  # what Python does for a package that is not installed
try:
    import {adapter}
except ImportError as exc:
    from simkernel.errors import MissingDependencyError
    assert isinstance(exc, MissingDependencyError), type(exc)
    print(exc)
else:
    raise SystemExit("imported without " + {blocked!r})
"""


@pytest.mark.parametrize(("adapter", "blocked", "extra"), ADAPTERS)
def test_missing_tool_names_the_extra(adapter, blocked, extra):
    run = subprocess.run(
        [sys.executable, "-c", CODE.format(adapter=adapter, blocked=blocked)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    message = run.stdout.strip()
    assert "\n" not in message and f"pip install 'simkernel[{extra}]'" in message, message
    assert f"(in a source checkout: pip install -e '.[{extra}]')" in message, message


def test_importing_the_package_imports_no_tool():
    code = "import sys, simkernel.integrations; print(sorted(m for m in ('langchain_core', 'llama_index', 'haystack', 'ragas', 'deepeval', 'mlflow', 'torch') if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
