"""Lazy imports of optional dependencies, with an error that names the install command."""

from __future__ import annotations

import importlib
from types import ModuleType

from simkernel.errors import MissingDependencyError

# The one torch version simkernel exports with (the export extra's torch; never imported at run time):
# named in every install hint, installed by scripts/setup.sh.
TORCH_PIN = "torch==2.13.0"
# extra name -> what it installs (kept in sync with pyproject.toml)
EXTRAS = {
    "export": "torch, transformers, onnx, sentence-transformers",
    "test": "pytest, sentence-transformers, scipy",
    "haystack": "haystack-ai",
    "langchain": "langchain-core",
    "llamaindex": "llama-index-core",
    "ragas": "ragas 0.4",
    "deepeval": "deepeval",
    "mlflow": "mlflow-skinny, alembic, matplotlib",
    "openvino": "openvino (precision='bf16')",
    "bench": "simsimd and the benchmark peers",
    "parquet": "pyarrow",
    "plot": "matplotlib (simkernel.bert_score.plot_example, --report FILE.html)",
    "ray": "ray[data], pyarrow",
    "serve": "starlette, uvicorn, prometheus-client (simkernel serve)",
}


def import_optional(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``pip install 'simkernel[extra]'``
    (and ``pip install -e '.[extra]'`` for a source checkout).

    ``feature`` says what the caller was trying to do, e.g. ``"exporting a checkpoint to ONNX"``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        hint = f"{TORCH_PIN} " if extra == "export" else ""
        raise MissingDependencyError(
            f"{feature} needs the Python package {module!r}, which is not installed ({exc}). Install it with: pip install {hint}'simkernel[{extra}]' (in a source checkout: pip install {hint}-e '.[{extra}]')"
        ) from exc
