"""The one place uvicorn is configured from ``ServerSettings``: ``voxflow serve`` and the tests'
servers both run what this builds, so what is tested is what is served."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from functools import partial
from typing import Any

import uvicorn

from voxflow.config import ServerSettings
from voxflow.server.http_protocol import limited_protocol
from voxflow.server.limits import HttpLimits
from voxflow.server.websocket_protocol import AbortableWebSocketProtocol

__all__ = ["uvicorn_config"]


def uvicorn_config(
    app: Any,
    settings: ServerSettings,
    fd_limit: int | None = None,
    on_refused: Callable[[str], None] | None = None,
    **options: Any,
) -> uvicorn.Config:
    """uvicorn's config for ``app`` with the settings' address and connection limits.

    ``fd_limit``: the open-file limit a derived ``max_connections`` is sized to (default: the
    process's now; ``voxflow serve`` raises it first). ``options`` go to ``uvicorn.Config`` as they
    are (log level, lifespan, graceful-shutdown timeout). ``on_refused`` counts the connection
    limits' refusals by reason (default: the app's ``state.metrics``, when it has one).
    """
    if on_refused is None:
        metrics = getattr(getattr(app, "state", None), "metrics", None)
        on_refused = metrics.count_rejected if metrics is not None else None
    limits = HttpLimits.from_settings(settings, fd_limit)
    tls = settings.ssl_certfile is not None
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        # The abort an HTTP answer needs to drop a client that stopped reading, and every limit
        # on a connection before the app sees it (server.http_protocol); keep-alive included, as
        # uvicorn's own setting takes whole seconds only.
        http=limited_protocol(limits, on_refused or (lambda _reason: None)),
        # Every client message is a JSON text of at most max_message_chars characters (6 bytes
        # each at worst, escaped): a larger one is refused by the WebSocket layer (close 1009)
        # before it is buffered whole.
        ws_max_size=settings.ws_max_message_bytes,
        # The abort that drops a WebSocket client that stopped reading (its close frame can
        # never be written).
        ws=AbortableWebSocketProtocol,
        ws_ping_interval=settings.ws_ping_interval_s,
        ws_ping_timeout=settings.ws_ping_timeout_s,
        # None and None: plain HTTP. uvicorn reads the files as it starts: a missing or bad one
        # stops the start with the SSL library's error.
        ssl_certfile=settings.ssl_certfile,
        ssl_keyfile=settings.ssl_keyfile,
        # uvicorn takes any factory for a sign of TLS: none for plain HTTP.
        ssl_context_factory=(
            partial(_with_session_tickets, settings.ssl_session_tickets) if tls else None
        ),
        **options,
    )


def _with_session_tickets(
    tickets: int, _config: uvicorn.Config, default: Callable[[], ssl.SSLContext]
) -> ssl.SSLContext:
    """uvicorn's context from the settings' files, sending ``tickets`` TLS 1.3 session tickets
    after each handshake (OpenSSL's default is two).

    The tickets arrive just as the client, its handshake done, writes its first request. A
    client that reads its TLS socket in one thread and writes it in another (websockets' sync
    client, under the elevenlabs SDK's ``convert_realtime``) then has OpenSSL read the ticket and
    encrypt the request at once on one connection, which it does not support: about one
    connection in a thousand, on a busy machine, loses its request and waits for an answer until
    it times out. With no tickets nothing arrives before the answer to that request.
    """
    context = default()
    context.num_tickets = tickets
    return context
