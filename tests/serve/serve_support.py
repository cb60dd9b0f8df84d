"""A real ``simkernel serve`` in a subprocess on a free loopback port (``--port 0``; the server prints
the port it got), stopped by the fixture that started it."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
CROSS_MODEL = "simkernel-test/minilm-l6-cross-encoder"
API_KEY = "test-key-0123456789abcdef"
START_TIMEOUT_S = 120.0
# the error's ``type`` for each status, as docs/server.md's "Errors" paragraph gives them (OpenAI's names)
CONTRACT_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    500: "server_error",
    503: "server_overloaded",
}
PROXY_VARS = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


def loopback_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS and k != "SIMKERNEL_API_KEY"}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    env.update(extra)
    return env


class ServerProcess:
    """``python -m simkernel serve ARGS --port 0``; ``url``, ``port``, ``pid``; :meth:`stop` sends
    SIGTERM and returns (exit status, stderr)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self._stderr = tempfile.TemporaryFile()
        command = [sys.executable, "-m", "simkernel", "serve", "--port", "0", *args]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self._stderr, env=env or loopback_env(), text=True
        )
        self.pid = self.process.pid
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(lines,), daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        line = ""
        while "listening on" not in line:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                self.process.wait()
                raise AssertionError(
                    f"the server did not start (status {self.process.returncode}): {self.stderr()}"
                )
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
        self.url = line.split("listening on ", 1)[1].split()[0]
        self.port = int(self.url.rsplit(":", 1)[1])
        self.banner = line

    def _pump(self, lines: queue.Queue) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            lines.put(line)

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.process.send_signal(sig)

    def wait(self, timeout: float = 60.0) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the server did not exit within {timeout} s of SIGTERM") from None

    def stop(self, timeout: float = 60.0) -> tuple[int, str]:
        if self.alive():
            self.signal(signal.SIGTERM)
        status = self.wait(timeout)
        return status, self.stderr()

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS in /proc status")

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))


@contextmanager
def served_client(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Iterator:
    """An httpx client of a :class:`ServerProcess` started with ``args``; the server must stop cleanly."""
    import httpx

    process = ServerProcess(*args, env=env)
    try:
        with httpx.Client(base_url=process.url, trust_env=False, timeout=timeout) as http:
            yield http
    finally:
        status, stderr = process.stop()
        assert status == 0, stderr


def assert_queue_full_message(message: str, log: str) -> None:
    """A full queue told in a remote client's terms: the served model's id and the server's option, never
    the server's file paths nor the library's Python settings; the library's own message goes to the log."""
    from simkernel.runtime.acquisition.resolve import resolve_model

    path = str(resolve_model(DEFAULT_MODEL))
    assert f"'{DEFAULT_MODEL}'" in message and "is full (--max-queue 1)" in message, message
    assert "retry after 1 s" in message, message
    for leak in (path, "TextEncoder", "SIMKERNEL_MAX_QUEUE", "max_queue="):
        assert leak not in message, (leak, message)
    assert f"the batching queue of '{path}" in log and "TextEncoder(..., max_queue=N)" in log, log[-2000:]
