"""The long-answer workload: real English prose of 60-256 tokens that nobody in this project wrote.

LLM and RAG answers are paragraphs, not the short extractive answers of the SAS sets. As a stand-in that any
machine has, the texts are the docstrings of the Python standard library of the interpreter running the
benchmark (read with ``ast`` from the ``.py`` files of ``sysconfig.get_paths()["stdlib"]``, nothing imported),
whitespace collapsed, doctest-bearing ones (``>>>``) left out, bucketed by their token count under the
model's tokenizer ([CLS] and [SEP] included) and sampled with a fixed seed. The same Python version gives
the same texts; the figures name the version.
"""

from __future__ import annotations

import ast
import random
import sys
import sysconfig
from pathlib import Path

# token-count buckets, inclusive: short (SAS-like), long answers, the longest the default model takes
BUCKETS = ((3, 12), (60, 128), (129, 256))
SKIPPED_FOLDERS = {"site-packages", "dist-packages", "test", "tests", "idlelib", "lib2to3", "turtledemo"}


def stdlib_docstrings() -> list[str]:
    """Distinct docstrings (module, class, function) of the running Python's standard library, in file
    order, whitespace collapsed, without doctest examples."""
    root = Path(sysconfig.get_paths()["stdlib"])
    seen: dict[str, None] = {}
    for path in sorted(root.rglob("*.py")):
        if SKIPPED_FOLDERS.intersection(path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                text = ast.get_docstring(node, clean=True)
                if text and ">>>" not in text:
                    seen.setdefault(" ".join(text.split()), None)
    return list(seen)


def bucketed(count_tokens, per_bucket: int = 256, seed: int = 0) -> dict[tuple[int, int], list[str]]:
    """Up to ``per_bucket`` docstrings per :data:`BUCKETS` entry, sampled with ``seed``;
    ``count_tokens(texts) -> list[int]`` is the model's token count (special tokens included)."""
    texts = stdlib_docstrings()
    counts = count_tokens(texts)
    out = {}
    for low, high in BUCKETS:
        bucket = [t for t, n in zip(texts, counts, strict=True) if low <= n <= high]
        random.Random(seed).shuffle(bucket)
        out[(low, high)] = bucket[:per_bucket]
    return out


def describe() -> str:
    return f"docstrings of the Python {sys.version.split()[0]} standard library"
