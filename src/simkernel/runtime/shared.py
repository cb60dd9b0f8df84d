"""Process-wide shared encoders: metrics and evaluators asking for the same model share one instance.

Keyed by the resolved bundle folder, precision, threads and providers, so ``"all-MiniLM-L6-v2"`` and
``"sentence-transformers/all-MiniLM-L6-v2"`` (or the bundle's path) share one loaded model.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
from simkernel.runtime.acquisition.resolve import resolve_model
from simkernel.runtime.encoders import CrossEncoder, TextEncoder, TokenEncoder
from simkernel.runtime.inference.batch_settings import batch_settings, batching_default
from simkernel.runtime.inference.cache_settings import resolve_cache_dir

_LOCK = threading.Lock()
_INSTANCES: dict[tuple, object] = {}


def _key(
    kind: str, model: str | Path, precision: str, threads: int | None, providers, token, options
) -> tuple:
    folder = resolve_model(model, precision=precision, token=token)  # the token is not part of the key
    settings = tuple(sorted(options.items()))
    return (kind, str(Path(folder).resolve()), precision, threads, tuple(providers or ()), settings)


def _shared(kind: str, factory, model, precision, threads, providers, token=None, **options):
    """The instance of ``factory`` for these settings, created once under the lock."""
    key = _key(kind, model, precision, threads, providers, token, options)

    def build():
        instance = factory(key[1], precision=precision, threads=threads, providers=providers, **options)
        instance.model = os.fspath(model)
        return instance

    return _instance(key, build)


def _instance(key: tuple, build):
    """The shared instance for ``key``, made by ``build()`` the first time, under the lock."""
    with _LOCK:
        instance = _INSTANCES.get(key)
        if instance is None:
            instance = _INSTANCES[key] = build()
        return instance


def get_text_encoder(
    model: str | Path = DEFAULT_MODEL,
    precision: str = "fp32",
    threads: int | None = None,
    providers: list[str] | None = None,
    token: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    batching: bool | None = None,
    max_batch_tokens: int | None = None,
    max_queue: int | None = None,
):
    """The shared :class:`~simkernel.runtime.TextEncoder` for these settings (created once;
    ``token`` is only used to download the model). ``cache_dir``: the persistent embedding cache
    (None: ``$SIMKERNEL_CACHE_DIR`` if set, else off), part of the key as the folder it resolves to.
    ``batching``, ``max_batch_tokens``, ``max_queue``: :class:`~simkernel.runtime.TextEncoder`'s (None: the
    ``SIMKERNEL_BATCHING`` / ``SIMKERNEL_MAX_BATCH_TOKENS`` / ``SIMKERNEL_MAX_QUEUE`` environment, else on,
    4,096 tokens a pass and 1,024 waiting calls); the evaluators and metrics use these instances, so
    their concurrent calls share forward passes by default."""
    folder = resolve_cache_dir(cache_dir)
    return _shared(
        "text",
        TextEncoder,
        model,
        precision,
        threads,
        providers,
        token,
        cache_dir=str(folder) if folder else "",
        **_batching_options(batching, max_batch_tokens, max_queue),
    )


def _batching_options(batching: bool | None, max_batch_tokens: int | None, max_queue: int | None) -> dict:
    """The batching settings as resolved now (environment included), so they are part of the key."""
    tokens, queue = batch_settings(max_batch_tokens, max_queue)
    on = batching_default() if batching is None else batching
    return {"batching": on, "max_batch_tokens": tokens, "max_queue": queue}


def get_cross_encoder(
    model: str | Path,
    precision: str = "fp32",
    threads: int | None = None,
    providers: list[str] | None = None,
    token: str | None = None,
    batching: bool | None = None,
    max_batch_tokens: int | None = None,
    max_queue: int | None = None,
):
    """The shared :class:`~simkernel.runtime.CrossEncoder` for these settings (created once;
    ``token`` is only used to download the model; batching as :func:`get_text_encoder`)."""
    options = _batching_options(batching, max_batch_tokens, max_queue)
    return _shared("cross", CrossEncoder, model, precision, threads, providers, token, **options)


def get_token_encoder(
    model: str | Path = DEFAULT_MODEL,
    precision: str = "fp32",
    threads: int | None = None,
    providers: list[str] | None = None,
    token: str | None = None,
):
    """The shared :class:`~simkernel.runtime.TokenEncoder` for these settings (created once, exporting the
    model's token layers into the store first when they are missing; ``token`` only downloads)."""
    from simkernel.runtime.acquisition.token_layers import resolve_token_layers

    folder = Path(resolve_token_layers(model, precision=precision, token=token, export=True)).resolve()
    key = ("token", str(folder), precision, threads, tuple(providers or ()), ())
    return _instance(key, lambda: TokenEncoder(folder, precision, threads, providers, name=os.fspath(model)))


def clear_shared_instances() -> None:
    """Forget every shared instance (they are freed once no caller holds them)."""
    with _LOCK:
        _INSTANCES.clear()
