"""uvicorn's HTTP/1.1 protocol (httptools), with the one thing ASGI lacks: a way to abort.

An answer that must end early (the client stopped reading, or a failure after the head was sent)
has to drop the connection. ASGI can only return without finishing the body, and uvicorn then
*closes* the transport, which waits for the unsent bytes to drain: a client that reads nothing
would hold its socket forever. So each request's scope carries the connection's ``abort``
(``transports.http_response.ABORT_EXTENSION``), and the HTTP adapter calls it.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from voxflow.transports.http_response import ABORT_EXTENSION

__all__ = ["AbortableHttpProtocol"]


class AbortableHttpProtocol(HttpToolsProtocol):
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {ABORT_EXTENSION: {"abort": self.transport.abort}}
