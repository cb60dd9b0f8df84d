"""Network faults a real loopback HTTP server (``http.server`` handler) can answer with, for the fault
tests of the OpenAI-compatible provider (tests/metrics) and the hub download (tests/runtime).

Each fault is what a real network or server does, on a real socket:

- ``reset``: headers and half the body, then a TCP reset (``SO_LINGER`` 0 and close);
- ``short``: the whole body under a ``Content-Length`` 1,000 bytes longer, then the connection closes;
- ``trickle``: headers, then the body one byte every ``TRICKLE_S`` (each read is quick; the whole is slow);
- ``stall``: nothing for ``STALL_S``, then the full answer (slower than the client's timeout);
- ``truncated``: 200 with the body cut in the middle and a ``Content-Length`` that matches the cut;
- ``malformed``: 200 with a body that is not JSON (a proxy's login page);
- ``429``: Too Many Requests with ``Retry-After: 0.2``; ``500`` / ``503``: a server error.

``refused`` (nothing listening) needs no handler: :func:`refused_port` gives a port with no server.
"""

from __future__ import annotations

import socket
import struct
import time

FAULTS = ("reset", "short", "trickle", "stall", "truncated", "malformed", "429", "500", "503")
TRICKLE_S = 0.05
STALL_S = 3.0


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed: connecting to it is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def send_fault(
    handler, fault: str, body: bytes, content_type: str = "application/json", headers=None
) -> None:
    """Answer the request of ``handler`` (a BaseHTTPRequestHandler) with ``fault`` instead of ``body``
    (the correct answer, status 200, ``headers`` added)."""
    extra = dict(headers or {})
    try:
        if fault in ("429", "500", "503"):
            message = b'{"error": {"message": "scripted fault ' + fault.encode() + b'"}}'
            if fault == "429":
                extra["Retry-After"] = "0.2"
            _head(handler, int(fault), len(message), "application/json", extra)
            handler.wfile.write(message)
            return
        if fault == "malformed":
            page = b"<html><body>Proxy login required</body></html>"
            _head(handler, 200, len(page), "text/html", extra)
            handler.wfile.write(page)
            return
        if fault == "truncated":
            cut = body[: max(1, len(body) // 2)]
            _head(handler, 200, len(cut), content_type, extra)
            handler.wfile.write(cut)
            return
        if fault == "stall":
            time.sleep(STALL_S)
            _head(handler, 200, len(body), content_type, extra)
            handler.wfile.write(body)
            return
        if fault == "trickle":
            _head(handler, 200, len(body), content_type, extra)
            for i in range(len(body)):
                handler.wfile.write(body[i : i + 1])
                handler.wfile.flush()
                time.sleep(TRICKLE_S)
            return
        if fault == "short":
            _head(handler, 200, len(body) + 1000, content_type, extra)
            handler.wfile.write(body)
            handler.wfile.flush()
            handler.close_connection = True
            return
        if fault == "reset":
            _head(handler, 200, len(body), content_type, extra)
            handler.wfile.write(body[: len(body) // 2])
            handler.wfile.flush()
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.close_connection = True
            handler.connection.close()
            return
    except (BrokenPipeError, ConnectionResetError, OSError):  # the client gave up first
        handler.close_connection = True
        return
    raise ValueError(f"unknown fault {fault!r}; one of {FAULTS}")


def _head(handler, status: int, length: int, content_type: str, headers: dict) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(length))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
