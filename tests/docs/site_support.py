"""The documentation site built into a temporary folder and served on loopback, for the site's tests."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.docs.pages import REPO


def build_site(site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of the repository into ``site`` (what `make docs` and CI run)."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


class _Handler(SimpleHTTPRequestHandler):
    failures: list[str]

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class' name
        pass

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        self.failures.append(f"{code} {self.path}")
        super().send_error(code, message, explain)


@contextmanager
def serve_site(site: Path) -> Iterator[tuple[str, list[str]]]:
    """(base URL, the requests that failed) of ``site`` served on 127.0.0.1 on a free port."""
    failures: list[str] = []
    handler = type("Handler", (_Handler,), {"failures": failures})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", failures
    finally:
        server.shutdown()
        server.server_close()


def page_paths(site: Path) -> list[str]:
    """Every page of the built site, as URL paths (``""`` the home page, ``"cli/"``, ...)."""
    paths = []
    for index in sorted(site.rglob("index.html")):
        rel = index.parent.relative_to(site).as_posix()
        if rel.startswith(("assets", "search")):
            continue
        paths.append("" if rel == "." else rel + "/")
    return paths
