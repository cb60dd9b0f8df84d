"""Running the server: load the models, bind the socket, serve with uvicorn, drain on SIGTERM.

The socket is bound after the models are loaded, so a client that can connect is served at once; the
line ``simkernel serve: listening on http://HOST:PORT`` (stdout) says so, with the port the system gave
for ``--port 0``. On SIGTERM (or Ctrl-C) uvicorn stops accepting, answers every accepted request and
closes idle connections; the drain report on stderr counts the requests accepted and answered. The
exit status is 0 when every accepted request was answered within ``--drain-timeout``, else 1.
"""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import socket
import sys

from simkernel._optional import import_optional
from simkernel.serve.settings import ServeSettings, settings_from_args


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET
    try:
        if ipaddress.ip_address(host).version == 6:
            family = socket.AF_INET6
    except ValueError:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family = infos[0][0]
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say so, and without it a response
    # (head, then body) waits ~40 ms for the client's delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve_command(args) -> int:
    import_optional("starlette", "serve", "simkernel serve")
    uvicorn = import_optional("uvicorn", "serve", "simkernel serve")
    import_optional("prometheus_client", "serve", "simkernel serve")
    settings = settings_from_args(args)
    return serve(settings, uvicorn)


def serve(settings: ServeSettings, uvicorn) -> int:
    from simkernel.serve.app import build_app
    from simkernel.serve.models import load_models

    if settings.api_key is None and not _is_loopback(settings.host):
        print(
            f"simkernel serve: warning: listening on {settings.host}, beyond this machine, with no API key; set SIMKERNEL_API_KEY or --api-key-file",
            file=sys.stderr,
        )
    models = load_models(settings)
    app = build_app(settings, models)
    sock = _bind(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=settings.drain_timeout_s,
        timeout_keep_alive=5,
    )
    server = uvicorn.Server(config)
    print(
        f"simkernel serve: listening on http://{shown}:{port} (models: {', '.join(models.ids())})", flush=True
    )
    # uvicorn re-raises the signal it caught once it has drained: these handlers make that a no-op, so
    # the process exits with the drain's status instead of dying by the signal
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    accepted, answered = app.accepted, app.answered
    print(
        f"simkernel serve: stopped; {accepted} requests accepted, {answered} answered",
        file=sys.stderr,
        flush=True,
    )
    return 0 if answered == accepted else 1
