"""A real HTTP server on 127.0.0.1 that answers the requests huggingface_hub 2.x makes for
``hf_hub_download`` (read from its source: ``file_download.get_hf_file_metadata`` / ``http_get`` and
``utils._http.hf_raise_for_status``):

- ``HEAD|GET /{repo}/resolve/{revision}/{path}``: 200 with ``X-Repo-Commit``, ``ETag`` and
  ``Content-Length`` for regular files; for ``.onnx`` (LFS) files a 302 whose ``Location`` points at
  another host name (``localhost``, like the hub's CDN) with ``X-Linked-Etag`` (sha256) and
  ``X-Linked-Size``, so huggingface_hub takes the metadata from the redirect and downloads from the CDN.
- errors carry ``X-Error-Code`` (``RepoNotFound`` with 401, ``RevisionNotFound``, ``EntryNotFound``
  with 404) exactly as the hub does, so huggingface_hub raises its own exception classes.
- ``GET /cdn/{sha256}``: the LFS blob.

Every request is recorded (method, path, Authorization header). Knobs: ``private`` (repo needs
``Bearer <token>``), ``fail_path`` (answer 500 to the CDN GET of that file), ``stall_path`` (send half of
that file, set ``stalled`` and hold the connection until ``release`` is set), ``faults`` (hub path ->
list of network faults of tests/fault_http.py, one consumed per GET of that file's content).
"""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.fault_http import send_fault

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    def __init__(self, repos: dict[str, dict[str, bytes]]):
        self.repos = repos
        self.requests: list[tuple[str, str, str | None]] = []
        self.private: dict[str, str] = {}  # repo -> required token
        self.fail_path: str | None = None
        self.stall_path: str | None = None
        self.faults: dict[str, list[str]] = {}
        self._faults_lock = threading.Lock()
        self.stalled = threading.Event()
        self.release = threading.Event()
        self._blobs = {hashlib.sha256(d).hexdigest(): d for files in repos.values() for d in files.values()}
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_HEAD(self):
                hub._handle(self, head=True)

            def do_GET(self):
                hub._handle(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def from_folder(repo: str, folder: Path, layout: dict[str, str]) -> dict[str, dict[str, bytes]]:
        """``layout`` maps the hub path (e.g. ``onnx/model.onnx``) to a file of ``folder``."""
        return {repo: {hub_path: (folder / local).read_bytes() for hub_path, local in layout.items()}}

    # ------------------------------------------------------------------------------------------
    def _send(self, h, status, headers=None, body=b"", head=False):
        h.send_response(status)
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head and body:
            h.wfile.write(body)

    def _error(self, h, status, code, message, head):
        self._send(h, status, {"X-Error-Code": code, "X-Error-Message": message}, message.encode(), head)

    def _handle(self, h, head: bool) -> None:
        auth = h.headers.get("Authorization")
        self.requests.append(("HEAD" if head else "GET", h.path, auth))
        path = h.path.split("?", 1)[0]
        if path.startswith("/cdn/"):
            return self._serve_blob(h, path[len("/cdn/") :], head)
        if "/resolve/" not in path:
            return self._error(h, 404, "EntryNotFound", "unknown endpoint", head)
        repo, rest = path.lstrip("/").split("/resolve/", 1)
        revision, _, file_path = rest.partition("/")
        files = self.repos.get(repo)
        token = self.private.get(repo)
        if files is None or (token is not None and auth != f"Bearer {token}"):
            return self._error(h, 401, "RepoNotFound", "Repository not found", head)
        if revision not in ("main", COMMIT):
            return self._error(h, 404, "RevisionNotFound", "Invalid rev id", head)
        data = files.get(file_path)
        if data is None:
            return self._error(h, 404, "EntryNotFound", "Entry not found", head)
        common = {"X-Repo-Commit": COMMIT}
        if file_path.endswith(".onnx"):
            sha = hashlib.sha256(data).hexdigest()
            location = f"http://localhost:{self.port}/cdn/{sha}"
            headers = {
                **common,
                "Location": location,
                "X-Linked-Etag": f'"{sha}"',
                "X-Linked-Size": str(len(data)),
                "ETag": f'"{sha[:40]}"',
            }
            return self._send(h, 302, headers, b"", head)
        etag = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        if not head and self._fault(h, file_path, data, {**common, "ETag": f'"{etag}"'}):
            return None
        return self._send(h, 200, {**common, "ETag": f'"{etag}"'}, data, head)

    def _fault(self, h, file_path: str, data: bytes, headers: dict) -> bool:
        """Answer with the next scripted fault of ``file_path``, if any (True when one was sent)."""
        with self._faults_lock:
            queue = self.faults.get(file_path)
            fault = queue.pop(0) if queue else None
        if fault is None:
            return False
        send_fault(h, fault, data, "application/octet-stream", headers)
        return True

    def _serve_blob(self, h, sha: str, head: bool) -> None:
        data = self._blobs.get(sha)
        if data is None:
            return self._error(h, 404, "EntryNotFound", "no such blob", head)
        name = next(
            p
            for files in self.repos.values()
            for p, d in files.items()
            if hashlib.sha256(d).hexdigest() == sha
        )
        if not head and name == self.fail_path:
            return self._error(h, 500, "InternalError", "storage backend failed", head)
        start = 0
        range_header = h.headers.get("Range")
        if not head and self._fault(h, name, data, {"ETag": f'"{sha}"'}):
            return None
        if range_header and range_header.startswith("bytes="):
            start = int(range_header[6:].split("-", 1)[0] or 0)
        body = data[start:]
        h.send_response(206 if start else 200)
        h.send_header("Content-Length", str(len(body)))
        h.send_header("ETag", f'"{sha}"')
        h.end_headers()
        if head:
            return
        if name == self.stall_path and not self.release.is_set():
            h.wfile.write(body[: len(body) // 2])
            h.wfile.flush()
            self.stalled.set()
            self.release.wait(60)
            h.close_connection = True
            return
        h.wfile.write(body)
