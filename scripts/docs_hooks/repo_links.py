"""mkdocs hook: links from a page to a file of the repository outside docs/ (source code, tests, scripts,
the README) are relative paths that work when the Markdown is read on GitHub; on the site they become links
to the repository (``extra.repository`` of mkdocs.yml). A link whose target does not exist in the checkout fails the strict build,
as a broken link between pages does."""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.repo_links")
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")
FENCE = re.compile(r"^(\s*)(```|~~~)")


def _rewrite(markdown: str, page_src: str, docs_dir: Path, repo_url: str) -> str:
    repo = docs_dir.parent
    page_dir = posixpath.dirname(f"{docs_dir.name}/{page_src}")

    def fix(match: re.Match) -> str:
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return match.group(0)
        path = posixpath.normpath(posixpath.join(page_dir, target))
        if path == docs_dir.name or path.startswith(docs_dir.name + "/"):
            return match.group(0)  # a page of the site: mkdocs checks it
        if path.startswith("../") or not (repo / path).exists():
            log.warning("%s links to %s (%s), which is not in the repository", page_src, target, path)
            return match.group(0)
        kind = "tree" if (repo / path).is_dir() else "blob"
        return (
            f"{match.group(1)}{repo_url.rstrip('/')}/{kind}/main/{path}{match.group(3) or ''}{match.group(4)}"
        )

    out, fenced = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        out.append(line if fenced else LINK.sub(fix, line))
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    return _rewrite(markdown, page.file.src_uri, Path(config["docs_dir"]), config["extra"]["repository"])
