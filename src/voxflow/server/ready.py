"""The line ``voxflow serve`` logs once it listens: where to point a browser.

uvicorn's own "Uvicorn running on ..." names the address bound, which for ``0.0.0.0`` is no
address a browser can open, and says nothing of what is served there. This line names the demo
page, the API docs and the metrics, on the address and port the listening socket really has
(``--port 0`` included).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Iterable

import uvicorn

from voxflow.config import ServerSettings

__all__ = ["bound_address", "log_ready", "ready_line"]

log = logging.getLogger(__name__)

# FastAPI's own routes: Swagger UI (its scripts come from a CDN) and the schema behind it.
DOCS_PATH = "/docs"
METRICS_PATH = "/metrics"


def bound_address(server: uvicorn.Server, settings: ServerSettings) -> tuple[str, int]:
    """The host and port of the first listening socket; the settings' when there is none."""
    sockets: Iterable[socket.socket] = (
        sock for listener in server.servers for sock in listener.sockets
    )
    for sock in sockets:
        name = sock.getsockname()
        if isinstance(name, tuple):
            return str(name[0]), int(name[1])
    return settings.host, settings.port


def _browsable(host: str) -> str:
    """``host`` as it goes in a URL a browser on this machine can open."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host  # a host name: as given
    if address.is_unspecified:
        # Bound to every interface: this machine reaches it on loopback.
        return "127.0.0.1" if address.version == 4 else "[::1]"
    return f"[{address}]" if address.version == 6 else str(address)


def ready_line(host: str, port: int, tls: bool, keys: bool) -> str:
    base = f"{'https' if tls else 'http'}://{_browsable(host)}:{port}"
    line = (
        f"voxflow is ready: demo page {base}/ | API docs {base}{DOCS_PATH}"
        f" | metrics {base}{METRICS_PATH}"
    )
    if keys:
        # No "?api_key=..." example: the log's redaction would cut it (and names stay out).
        line += " (API keys are on: README's Public deployment says how a browser sends one)"
    return line


def log_ready(server: uvicorn.Server, settings: ServerSettings, keys: bool) -> None:
    host, port = bound_address(server, settings)
    log.info("%s", ready_line(host, port, settings.ssl_certfile is not None, keys))
