"""Fixtures of the server tests: one server of the default model and the test cross-encoder with an
API key (for the module), the key, and httpx clients that bypass any proxy. The default model must be
in the store (``make models``); every server a test starts is stopped by its fixture."""

from __future__ import annotations

import httpx
import pytest
from serve_support import API_KEY, CROSS_MODEL, DEFAULT_MODEL, ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    key_file = tmp_path_factory.mktemp("key") / "api-key"
    key_file.write_text(API_KEY + "\n", encoding="utf-8")
    process = ServerProcess("--model", DEFAULT_MODEL, "--model", CROSS_MODEL, "--api-key-file", str(key_file))
    try:
        yield process
    finally:
        status, stderr = process.stop()
        assert API_KEY not in stderr, "the server printed its API key"
        assert status == 0, stderr


@pytest.fixture
def client(server):
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {API_KEY}"}, trust_env=False, timeout=60
    ) as http:
        yield http


@pytest.fixture(scope="module")
def library():
    """The in-process library's models: the reference of every server result."""
    from simkernel.runtime import CrossEncoder, TextEncoder

    return {"text": TextEncoder(DEFAULT_MODEL), "cross": CrossEncoder(CROSS_MODEL)}


@pytest.fixture(scope="module")
def server_and_client(server):
    """A module-wide client (hypothesis runs many examples in one test function)."""
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {API_KEY}"}, trust_env=False, timeout=60
    ) as http:
        yield server, http
