"""How the server's modules import one another: the ``simkernel.serve`` package module stays thin (imports
none of its modules), and its modules name each other by module path, never through the package's
namespace (``from simkernel.serve import bodies``), so no import goes round through the package."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SERVE = Path(__file__).resolve().parents[2] / "src" / "simkernel" / "serve"


def test_serve_modules_import_their_siblings_by_module_path():
    through_the_package = []
    for path in sorted(SERVE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "simkernel.serve":
                through_the_package.append(f"{path.name}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
                through_the_package.append(f"{path.name}:{node.lineno}")  # from . import x
    assert not through_the_package, through_the_package


def test_importing_the_package_imports_none_of_its_modules():
    code = "import sys, simkernel.serve; print(sorted(m for m in sys.modules if m.startswith('simkernel.serve.')))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
