"""The Starlette application: routes, the error contract for every failure, and the app's state
(settings, served models, metrics)."""

from __future__ import annotations

import asyncio
import sys
import time
import traceback
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import simkernel.serve.routes_eval as routes_eval
import simkernel.serve.routes_openai as routes_openai
import simkernel.serve.routes_score as routes_score
import simkernel.serve.routes_tei as routes_tei
from simkernel.serve.bodies import read_json
from simkernel.serve.errors import TEI_PATHS, ApiError, error_body, tei_error
from simkernel.serve.metrics import CONTENT_TYPE, ServerMetrics
from simkernel.serve.middleware import ServeMiddleware
from simkernel.serve.models import ServedModels
from simkernel.serve.offload import json_answer, to_json
from simkernel.serve.settings import ServeSettings


class AppState:
    def __init__(self, settings: ServeSettings, models: ServedModels) -> None:
        self.settings = settings
        self.models = models
        self.metrics = ServerMetrics(models)
        self.started = int(time.time())
        self.ready = True


def _error_response(exc: ApiError, path: str = "") -> Response:
    """The error answer in the shape of the path's protocol: TEI's on TEI's routes, OpenAI's elsewhere."""
    if path in TEI_PATHS:
        status, body = tei_error(exc.status, exc.message, exc.code)
    else:
        status, body = exc.status, error_body(exc.status, exc.message, exc.code)
    return Response(body, status_code=status, media_type="application/json", headers=exc.headers)


def _json(value: Any) -> Response:
    return Response(to_json(value), media_type="application/json")


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _unless_disconnected(request: Request, work: Any) -> Any:
    """Await ``work``; if the client goes away first, cancel it (its texts not yet in a pass are dropped
    from the model's queue) and answer 499 to nobody."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # this request itself is cancelled (the drain timeout): so is its work
        task.cancel()
        raise
    finally:
        watch.cancel()
    if task.done():
        return task.result()
    task.cancel()
    raise ApiError(499, "the client disconnected before the answer was ready", "client_disconnected")


def _post(state: AppState, handler):
    """A POST endpoint: the body read under the limits, ``handler(state, body)``'s value as JSON (or
    bytes already JSON; a large value written in a worker: :func:`~simkernel.serve.offload.json_answer`), an :class:`ApiError` as its error answer; work for a client that disconnected
    is cancelled."""

    async def endpoint(request: Request) -> Response:
        from simkernel.errors import ModelError

        path = request.url.path
        try:
            body = await read_json(request, state.settings.max_request_bytes, state.settings.body_timeout_s)
            value = await _unless_disconnected(request, handler(state, body))
        except ApiError as exc:
            return _error_response(exc, path)
        except ModelError as exc:
            if path not in TEI_PATHS:
                raise  # OpenAI's routes: the app's 500
            # TEI answers a failed inference 424 ("backend"); the traceback goes to the log as a 500's does
            print("simkernel serve: model error\n" + traceback.format_exc(), file=sys.stderr)
            message = f"the model failed while answering (a fault of the server, not of the request): {exc}; retry, and report it if it persists"
            return _error_response(ApiError(424, message, "model_error"), path)
        if not isinstance(value, bytes):
            value = await json_answer(value)  # a large answer is written in a worker
        return Response(value, media_type="application/json")

    return endpoint


def _post_metric(state: AppState):
    """``POST /v1/score/{metric}``: the path's metric scored by :func:`routes_score.score`."""

    async def endpoint(request: Request) -> Response:
        name = request.path_params["metric"]
        return await _post(state, lambda st, body: routes_score.score(st, body, name))(request)

    return endpoint


def build_app(settings: ServeSettings, models: ServedModels) -> ServeMiddleware:
    """The ASGI application of ``simkernel serve`` (the middleware around the Starlette app)."""
    state = AppState(settings, models)

    async def list_models(request: Request) -> Response:
        return _json(routes_openai.models_payload(state))

    async def health(request: Request) -> Response:
        return _json({"status": "ok"})

    async def ready(request: Request) -> Response:
        if not state.ready:
            return _error_response(ApiError(503, "the models are not loaded yet; retry shortly", "not_ready"))
        return _json({"status": "ready", "models": state.models.ids()})

    async def metrics(request: Request) -> Response:
        return Response(state.metrics.render(), media_type=CONTENT_TYPE)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        path = request.url.path
        if exc.status_code == 404:
            return _error_response(routes_openai.not_served_path(path), path)
        if exc.status_code == 405:
            message = f"{request.method} is not allowed on {path}; see docs/server.md's endpoints for the method of each path"
            return _error_response(ApiError(405, message, "method_not_allowed"), path)
        return _error_response(ApiError(exc.status_code, str(exc.detail), "http_error"), path)

    async def internal_error(request: Request, exc: Exception) -> Response:
        # Starlette answers with this, then re-raises: the middleware prints the traceback
        message = "the server failed while answering (a fault of the server, not of the request); retry, and report it if it persists"
        return _error_response(ApiError(500, message, "internal_error"), request.url.path)

    async def tei_info(request: Request) -> Response:
        try:
            return _json(routes_tei.info(state, request.query_params.get("model")))
        except ApiError as exc:
            return _error_response(exc, request.url.path)

    routes = [
        Route("/v1/embeddings", _post(state, routes_openai.embeddings), methods=["POST"]),
        Route("/similarity", _post(state, routes_tei.similarity), methods=["POST"]),
        Route("/rerank", _post(state, routes_tei.rerank), methods=["POST"]),
        Route("/embed", _post(state, routes_tei.embed), methods=["POST"]),
        Route("/predict", _post(state, routes_tei.predict), methods=["POST"]),
        Route("/tokenize", _post(state, routes_tei.tokenize), methods=["POST"]),
        Route("/decode", _post(state, routes_tei.decode), methods=["POST"]),
        Route("/info", tei_info, methods=["GET"]),
        Route("/", _post(state, routes_tei.root), methods=["POST"]),
        Route("/", health, methods=["GET"]),  # TEI's health probe on GET /
        Route("/v1/sas", _post(state, routes_eval.sas), methods=["POST"]),
        Route("/v1/reference-match", _post(state, routes_eval.reference_match), methods=["POST"]),
        Route("/v1/score/{metric}", _post_metric(state), methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/ready", ready, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    state.metrics.label_routes(routes)
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: internal_error})
    app.state.serve = state
    middleware = ServeMiddleware(app, settings.api_key, state.metrics)
    middleware.state = state  # type: ignore[attr-defined]
    return middleware
