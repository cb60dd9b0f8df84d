"""One HTTP request with a wall-clock limit: a server that trickles bytes cannot hold the caller forever.

``urllib``'s ``timeout`` bounds each socket operation, not the request: a server (or proxy) that sends a
byte every few seconds keeps every single read under the limit and the request alive indefinitely.
:func:`open_with_deadline` opens the request through an opener whose connections register their socket
with a timer; when ``seconds`` have passed since the start, the timer shuts the socket down, the pending
read ends at once, and :class:`Deadline` reports that the time ran out (the caller raises its timeout
error). Proxies (``HTTPS_PROXY`` and friends) and TLS work as with ``urllib.request.urlopen``.
"""

from __future__ import annotations

import socket
import threading
import urllib.request
from typing import Any


class Deadline:
    """A timer that shuts down the sockets of one request when ``seconds`` have passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:  # connected after the end: shut it at once
                _shutdown(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed
        pass


def _watching(handler_class: type, deadline: Deadline) -> urllib.request.BaseHandler:
    """An instance of ``handler_class`` (urllib's HTTP or HTTPS handler) whose connections report their
    socket to ``deadline`` as soon as they are connected."""

    class Handler(handler_class):
        def do_open(self, http_class, req, **kwargs):
            class Watched(http_class):
                def connect(self) -> None:
                    super().connect()
                    deadline.watch(self.sock)

            return super().do_open(Watched, req, **kwargs)

    return Handler()


def open_with_deadline(request: urllib.request.Request, deadline: Deadline, read_timeout: float) -> bytes:
    """The body of ``request``'s response, read whole before ``deadline`` expires (``read_timeout``: the
    limit of each socket operation, as ``urlopen(timeout=...)``). Raises what urllib raises
    (``HTTPError``, ``URLError``, ``OSError``, ``http.client.HTTPException``); the caller checks
    ``deadline.expired`` to tell a timeout from a broken connection."""
    opener = urllib.request.build_opener(
        _watching(urllib.request.HTTPHandler, deadline), _watching(urllib.request.HTTPSHandler, deadline)
    )
    with opener.open(request, timeout=read_timeout) as response:
        return response.read()
