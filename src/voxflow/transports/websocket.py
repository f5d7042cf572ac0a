"""The Starlette WebSocket adapter: a ``Transport`` of text and binary frames for the runner.

It moves frames and nothing else; the protocol decides what they mean and the runner decides
when the connection ends. Starlette reports a peer that went away in three ways (a
``WebSocketDisconnect``, an ``OSError`` from the server, a ``RuntimeError`` for a send after the
close); all three become ``PeerGone``. The connection's abort (``transports.abort``) goes to the
runner, which drops a client whose close frame cannot be written (it stopped reading).
"""

from __future__ import annotations

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from voxflow.session.runner import Close, PeerGone, Transport
from voxflow.transports.abort import scope_abort

__all__ = ["WebSocketFrame", "websocket_transport"]

WebSocketFrame = str | bytes
_MAX_REASON_BYTES = 123  # the WebSocket limit on a close reason


def websocket_transport(websocket: WebSocket) -> Transport[WebSocketFrame, WebSocketFrame]:
    """The frames of an accepted ``websocket``."""

    async def receive() -> WebSocketFrame | None:
        try:
            message = await websocket.receive()
        except WebSocketDisconnect:
            return None
        if message["type"] == "websocket.disconnect":
            return None
        text = message.get("text")
        if text is not None:
            return str(text)
        return bytes(message.get("bytes") or b"")

    async def send(frame: WebSocketFrame) -> None:
        try:
            if isinstance(frame, str):
                await websocket.send_text(frame)
            else:
                await websocket.send_bytes(frame)
        except (WebSocketDisconnect, OSError, RuntimeError) as error:
            raise PeerGone(str(error)) from error

    async def close(close: Close) -> None:
        if websocket.client_state is not WebSocketState.CONNECTED:
            return
        reason = close.reason.encode()[:_MAX_REASON_BYTES].decode(errors="ignore")
        try:
            await websocket.close(close.code, reason)
        except (WebSocketDisconnect, OSError, RuntimeError) as error:
            raise PeerGone(str(error)) from error

    return Transport(receive, send, close, scope_abort(websocket.scope))
