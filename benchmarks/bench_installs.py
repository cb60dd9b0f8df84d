"""Install size: each tool simkernel plugs into, alone, with sentence-transformers (torch: what the tool's
own local-embedding route installs) and with simkernel instead.

    python benchmarks/bench_installs.py

For each tool, MB on disk of the union of the requirements' closures as installed for the interpreter that
has the tool (support.install_size_mb: the files in each distribution's RECORD, each distribution once):

- the tool alone: simkernel's extra of that tool (pyproject.toml), e.g. ``haystack-ai>=2.8``;
- the tool with its torch route: plus ``sentence-transformers`` (Haystack: ``sentence-transformers-haystack``;
  LangChain's ``HuggingFaceEmbeddings``, LlamaIndex's ``HuggingFaceEmbedding``, ragas' ``HuggingFaceEmbeddings``
  all run sentence-transformers, and so does a local model in deepeval or an MLflow metric);
- the tool with simkernel: plus simkernel's dependencies and its own package (src/simkernel with the built
  extension).

Haystack, LangChain, LlamaIndex and MLflow are measured in the development venv (.venv), ragas and deepeval
in their own (``make tool-venvs``), all with the local CPU build of torch 2.13.0 (a default torch from PyPI
is a CUDA build, several GB more). Prints a Markdown table and the machine line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from support import REPO, install_size_mb, machine, simkernel_package_mb, simkernel_requirements

# tool -> (its simkernel extra, its venv under .tool-venvs or None for this interpreter, its torch route)
TOOLS = {
    "Haystack": ("haystack", None, "sentence-transformers-haystack"),
    "LangChain": ("langchain", None, "sentence-transformers"),
    "LlamaIndex": ("llamaindex", None, "sentence-transformers"),
    "MLflow": ("mlflow", None, "sentence-transformers"),
    "ragas": ("ragas", "ragas", "sentence-transformers"),
    "deepeval": ("deepeval", "deepeval", "sentence-transformers"),
}


def interpreter(venv: str | None) -> str:
    if venv is None:
        return sys.executable
    python = REPO / ".tool-venvs" / venv / "bin" / "python"
    if not Path(python).is_file():
        sys.exit(f"the {venv} venv {python} is missing: build it with `make tool-venvs`")
    return str(python)


def main() -> None:
    package = simkernel_package_mb()
    lines = [
        "| tool | alone | + sentence-transformers (torch) | + simkernel | simkernel adds | torch route adds |",
        "|---|---|---|---|---|---|",
    ]
    for tool, (extra, venv, route) in TOOLS.items():
        python = interpreter(venv)
        tool_requirements = simkernel_requirements(extra, dependencies=False)
        alone = install_size_mb(python, *tool_requirements)
        with_torch = install_size_mb(python, *tool_requirements, route)
        with_simkernel = install_size_mb(python, *simkernel_requirements(extra)) + package
        lines.append(
            f"| {tool} | {alone:,.0f} MB | {with_torch:,.0f} MB | {with_simkernel:,.0f} MB"
            f" | {with_simkernel - alone:,.0f} MB | {with_torch - alone:,.0f} MB |"
        )
    print("\n".join(lines))
    print(f"\nsimkernel's own package: {package:.1f} MB.\n\nMachine: {machine()}")


if __name__ == "__main__":
    main()
