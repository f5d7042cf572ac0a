"""The Starlette WebSocket adapter: a ``Transport`` of text and binary frames for the runner.

It moves frames and nothing else; the protocol decides what they mean and the runner decides
when the connection ends. Starlette reports a peer that went away in three ways (a
``WebSocketDisconnect``, an ``OSError`` from the server, a ``RuntimeError`` for a send after the
close); all three become ``PeerGone``. The connection's abort (``transports.abort``) goes to the
runner, which drops a client whose close frame cannot be written (it stopped reading).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from voxflow.connection.wire import Close, PeerGone, Transport
from voxflow.session.errors import SHUTTING_DOWN
from voxflow.transports.abort import scope_abort
from voxflow.transports.http_status import HttpError

__all__ = ["WebSocketFrame", "refuse_while_draining", "websocket_transport"]

DENIAL_EXTENSION = "websocket.http.response"  # ASGI: answer a handshake with an HTTP response

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


async def refuse_while_draining(
    websocket: WebSocket, draining: bool, answer: Callable[[str, str], HttpError]
) -> bool:
    """Refuse a handshake that comes while the server drains, with the protocol's HTTP error
    (``answer(code, message)``: 503 and its body) and ``Retry-After``; True when it did.

    A load balancer learns that a replica is leaving from such an answer and retries the
    handshake on another one (nginx's ``proxy_next_upstream http_503``), where an accepted
    socket whose first message is refused would be a failed session. A server without the
    ASGI denial response (False): the socket is accepted and its protocol refuses the stream.
    """
    if not draining or DENIAL_EXTENSION not in websocket.scope.get("extensions", {}):
        return False
    error = answer("shutting_down", SHUTTING_DOWN)
    await websocket.send_denial_response(
        JSONResponse(error.body, status_code=error.status, headers={"retry-after": "1"})
    )
    return True
