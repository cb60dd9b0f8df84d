"""``simkernel serve``: an HTTP server for embeddings, similarity, reranking and scoring.

Existing clients talk to it unchanged: OpenAI's embeddings API (``POST /v1/embeddings``, the ``openai``
client, eval_lib's "openai" provider), Hugging Face text-embeddings-inference's API (``POST /embed``,
``/predict``, ``/rerank``, ``/similarity``, ``/tokenize``, ``/decode``, ``/`` and ``GET /info``, with TEI's
error shape: huggingface_hub's ``InferenceClient``, Haystack's and LangChain's TEI clients), and simkernel's
own ``POST /v1/sas`` and ``POST /v1/reference-match``; ``GET /v1/models``, ``/health``, ``/ready`` and
``/metrics`` (Prometheus) beside them.

Why Starlette + uvicorn: the server needs routing, request and response objects and an ASGI server with
graceful shutdown, nothing more. FastAPI is Starlette plus pydantic request models and OpenAPI
generation; here every body is checked by hand anyway (so that each error names the field and the fix,
in the shape of the route's protocol, and no client input can cause a 500), so FastAPI would add imports and
start-up time and no function. uvicorn stops accepting on SIGTERM and waits for the accepted requests
(``timeout_graceful_shutdown``), which is the drain the server needs. Both come with the ``serve``
extra and are imported only by this package, never by ``import simkernel``.

Every request is served by the models loaded at start (``--model``): a request never loads a model,
reads a path or downloads from a hub. Concurrent requests share forward passes through the model's
batcher (``TextEncoder.aencode`` / ``CrossEncoder.apredict``); a full queue is a 503 with Retry-After.

Modules: :mod:`~simkernel.serve.settings` (the command's settings, the API key), :mod:`~.models` (the
served models), :mod:`~.errors` (the error contract), :mod:`~.bodies` (reading and checking bodies),
:mod:`~.routes_openai`, :mod:`~.routes_tei`, :mod:`~.routes_eval`, :mod:`~.routes_score` (the endpoints),
:mod:`~.offload` (what runs off the event loop), :mod:`~.metrics`
(Prometheus), :mod:`~.middleware` (key, counting, limits), :mod:`~.app` (the Starlette app) and
:mod:`~.server` (uvicorn, signals, the drain). This package module stays thin: it imports none of them
(``run_serve`` imports the server when called), and they import one another by module path, never
through this package's namespace, so no import goes round through it.
"""

from __future__ import annotations

__all__ = ["run_serve"]


def run_serve(args) -> int:
    """Run ``simkernel serve`` with the parsed command line ``args``; returns the exit status."""
    from simkernel.serve.server import serve_command

    return serve_command(args)
