"""mkdocs hook: the CLI reference page (cli-reference.md), generated at build time from the argument parser
itself (``simkernel.cli.parser.build_parser``): every command's and sub-command's ``--help``, so the page
cannot fall behind the code. Nothing of it is written by hand or kept in the repository."""

from __future__ import annotations

import argparse
import os

from mkdocs.structure.files import File, Files

PAGE = "cli-reference.md"
WIDTH = "100"  # argparse wraps --help at $COLUMNS: one width for the page, whatever the terminal


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of each sub-command of ``parser``, in the order they were added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.extend(action.choices.items())
    return found


def _walk(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, str]]:
    pages = [(path, parser.format_help())]
    for name, child in _subcommands(parser):
        pages.extend(_walk(child, f"{path} {name}"))
    return pages


def render() -> str:
    """The page's Markdown: one section per command, its --help verbatim."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        from simkernel.cli.parser import build_parser

        sections = _walk(build_parser(), "simkernel")
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    lines = [
        "# CLI reference",
        "",
        "Every command's `--help`, generated from the argument parser when the site is built (the guide with",
        "examples: [The command line](cli.md)). `python -m simkernel ...` is the same command.",
        "",
    ]
    for command, text in sections:
        lines += [f"## `{command}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)


def on_files(files: Files, config, **kwargs) -> Files:
    files.append(File.generated(config, PAGE, content=render()))
    return files
