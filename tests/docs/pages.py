"""The pages whose examples the tests run (README.md and the site's Markdown), and their fenced blocks.

Python blocks are found and run by pytest-examples; shell blocks are read with markdown-it-py (the parser
pytest-examples does not offer for them). A block's settings are ``key="value"`` pairs on its fence line,
as pytest-examples reads them: ``test="skip"`` (the block must then say why, in a line
``# not run by the tests: REASON`` that the reader sees), ``test="pytest"`` (a test file, run in a pytest
session of its own), ``venv="ragas"`` (run in that tool's venv), ``server="start"`` (the command that
starts the server the ``server="use"`` blocks talk to).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SKIP_NOTE = "# not run by the tests:"
SHELLS = ("sh", "bash", "shell", "console")


def pages() -> list[Path]:
    """README.md and every Markdown page of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def settings(info: str) -> dict[str, str]:
    """The ``key="value"`` pairs of a fence line (pytest-examples' rule, for the shell blocks too)."""
    return {m.group(1): m.group(3) for m in re.finditer(r"([^{\s]+?)=(['\"])(.+?)\2", info)}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    info: str
    source: str

    @property
    def settings(self) -> dict[str, str]:
        return settings(self.info)

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a page, with its language and fence line."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    blocks = []
    for token in tokens:
        if token.type == "fence" and token.map is not None:
            lang = token.info.split()[0].lower() if token.info.strip() else ""
            blocks.append(Block(path, token.map[0] + 1, lang, token.info, token.content))
    return blocks


def shell_blocks() -> list[Block]:
    return [b for page in pages() for b in fenced_blocks(page) if b.lang in SHELLS]


def skip_reason(source: str) -> str | None:
    """The reason a skipped block shows its reader, or None where it shows none."""
    for line in source.splitlines():
        if line.strip().startswith(SKIP_NOTE):
            return line.strip()[len(SKIP_NOTE) :].strip()
    return None
