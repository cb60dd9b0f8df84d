"""The house rules of the source tree, checked by the suite as well as by `make check`: small modules,
layers that only point down (the import-linter contracts in pyproject.toml), and error messages a user
can grep for (one string literal each, never implicitly concatenated pieces)."""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "simkernel"
MAX_LINES = 600  # split modules by topic, not by size: one topic may need more than 400 lines
MODULE_SUFFIXES = (".py", ".pyx", ".pxd", ".pyi")


def _modules() -> list[Path]:
    found = sorted(p for p in SRC.rglob("*") if p.suffix in MODULE_SUFFIXES)
    assert len(found) > 40, f"found only {len(found)} modules under {SRC}"
    return found


def test_no_module_over_600_lines():
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in _modules()
    }
    too_long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines (split them by job): {too_long}"


def test_import_contracts_hold():
    """lint-imports: the layer order and no import cycle (contracts in pyproject.toml)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout and "kept" in run.stdout, run.stdout


def _implicit_concatenations(source: str) -> list[tuple[int, int]]:
    """(first line, last line) of each run of adjacent string literals (implicit concatenation)."""
    runs, current = [], []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING:
            current.append(token)
        elif token.type in (tokenize.NL, tokenize.COMMENT) and current:
            continue
        else:
            if len(current) > 1:
                runs.append((current[0].start[0], current[-1].end[0]))
            current = []
    return runs


def _message_spans(tree: ast.AST) -> list[tuple[int, int]]:
    """Line spans of raise statements and of calls that build an error or a warning."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            spans.append((node.lineno, node.end_lineno or node.lineno))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name.endswith(("Error", "Exception", "Warning")) or name == "warn":
                spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def test_error_messages_are_whole_literals():
    split = []
    for path in (p for p in _modules() if p.suffix == ".py"):
        source = path.read_text(encoding="utf-8")
        spans = _message_spans(ast.parse(source))
        for first, last in _implicit_concatenations(source):
            if any(start <= first and last <= end for start, end in spans):
                split.append(f"{path.relative_to(ROOT)}:{first}")
    assert not split, (
        f"error messages split into implicitly concatenated pieces (make each one literal): {split}"
    )


def test_the_message_check_finds_a_split_message():
    source = 'def f():\n    raise ValueError(\n        "half of a "\n        "message"\n    )\n'
    spans = _message_spans(ast.parse(source))
    assert _implicit_concatenations(source) == [(3, 4)]
    assert any(start <= 3 and 4 <= end for start, end in spans)


# where a file format's name may be written: its own module and the registry (tables/), and the command
# line's parser (its --input-format / --output-format choices come from the registry, its help names them)
FORMAT_NAME_PLACES = ("tables/", "cli/parser.py")
# "parquet" is also the name of the optional extra (pip install 'simkernel[parquet]'), listed here; bert_score
# names its (comma-separated) BERTScore baseline files "<model>.tsv", which is no table format of ours
EXTRA_NAME_PLACES = ("_optional.py", "scoring/bertscore/baselines.py")


def _format_names() -> tuple[str, ...]:
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from simkernel.tables.formats import FORMATS
    finally:
        sys.path.pop(0)
    return FORMATS


def _format_name_uses(source: str, names: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, name) of every string constant that is exactly a format's name (any case), or that a
    format's name ends as an extension (".parquet")."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value.lower()
            if value in names or value.lstrip(".") in names and value.startswith("."):
                found.append((node.lineno, node.value))
    return sorted(found)


def test_format_names_stay_in_tables():
    """A file format is one module of simkernel.tables plus one registry line: nothing else branches on
    a format's name."""
    names = _format_names()
    outside = {}
    for path in _modules():
        if path.suffix != ".py":
            continue
        relative = path.relative_to(SRC).as_posix()
        if relative.startswith(FORMAT_NAME_PLACES + EXTRA_NAME_PLACES):
            continue
        uses = _format_name_uses(path.read_text(encoding="utf-8"), names)
        if uses:
            outside[relative] = uses
    assert not outside, (
        f"format names outside simkernel.tables and the parser (ask the format object): {outside}"
    )


def test_the_format_name_check_finds_a_branch():
    source = 'if fmt == "parquet":\n    pass\nsuffix = ".jsonl"\nname = "parquet_rows"\n'
    assert _format_name_uses(source, ("csv", "tsv", "jsonl", "parquet")) == [(1, "parquet"), (3, ".jsonl")]
