"""uvicorn's WebSocket protocol (websockets' sans-I/O implementation) with an abort in its scope.

A WebSocket close is a frame the client must be sent, and uvicorn waits for the socket to take
more bytes before it writes one. For a client that stopped reading that never happens: after the
runner's stall close its socket, and the audio buffered for it, would stay open for as long as
the client holds it. The connection's ``abort`` (``transports.abort``), handed by the WebSocket
adapter to the runner, drops it instead once a close has had its time (``connection.runner``).
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from voxflow.transports.abort import ABORT_EXTENSION

__all__ = ["AbortableWebSocketProtocol"]


class AbortableWebSocketProtocol(WebSocketsSansIOProtocol):
    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope: Any = getattr(self, "scope", None)  # none for a refused handshake: no app runs
        if scope is not None:
            # The app's task was created above but runs only on the loop's next turn: it sees this.
            scope["extensions"][ABORT_EXTENSION] = {"abort": self.transport.abort}
