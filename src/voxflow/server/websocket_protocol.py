"""uvicorn's WebSocket protocol (websockets' sans-I/O implementation) with an abort in its scope.

A WebSocket close is a frame the client must be sent, and uvicorn waits for the socket to take
more bytes before it writes one. For a client that stopped reading that never happens: after the
runner's stall close its socket, and the audio buffered for it, would stay open for as long as
the client holds it. The connection's ``abort`` (``transports.abort``), handed by the WebSocket
adapter to the runner, drops it instead once a close has had its time (``connection.runner``).

A handshake answered with an HTTP response (the ASGI denial response: Deepgram's 429 past the
admission limit, any protocol's 503 while draining) is a handshake completed: uvicorn's
implementation does not mark it so, and logged "ASGI callable returned without completing
handshake" at error level for every such refusal (a flood of refusals, a flood of errors).
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

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            self.handshake_complete = True  # answered: the denial response is out
