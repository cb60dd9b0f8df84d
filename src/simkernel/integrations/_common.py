"""What the adapters share: the tool import with an install hint, the shared encoder, the checks.

``require``, ``check_settings`` and ``shared_encoder`` are defined in :mod:`simkernel.components._settings`
(the Haystack embedders and ranker of :mod:`simkernel.components` use them too, and sit a layer below);
``embed`` / ``aembed`` / ``loaded_encoder`` are the adapters' own.
"""

from __future__ import annotations

from typing import Any

from simkernel.components._settings import PRECISIONS, check_settings, require, shared_encoder
from simkernel.runtime.inference.threads import run_blocking

__all__ = ["PRECISIONS", "aembed", "check_settings", "embed", "loaded_encoder", "require", "shared_encoder"]


def embed(encoder: Any, texts: list[str], batch_size: int, normalize: bool) -> list[list[float]]:
    """One vector per text, in order, from ONE encoder call for the whole list, as lists of Python floats
    (what the tools' embedding APIs return)."""
    return encoder.encode(texts, batch_size=batch_size, normalize=normalize).tolist()


async def loaded_encoder(adapter: Any) -> Any:
    """``adapter.encoder`` for an async method: when the model is not loaded yet (``adapter._encoder`` is
    None), the property that loads it (reading files, building the session) runs on the runtime's compute
    pool, not on the event loop, as the Haystack components' ``run_async`` load theirs."""
    if adapter._encoder is not None:
        return adapter._encoder
    return await run_blocking(lambda: adapter.encoder)


async def aembed(encoder: Any, texts: list[str], batch_size: int, normalize: bool) -> list[list[float]]:
    """:func:`embed` awaited on the encoder's ``aencode`` (shared passes; the event loop is never blocked)."""
    return (await encoder.aencode(texts, batch_size=batch_size, normalize=normalize)).tolist()
