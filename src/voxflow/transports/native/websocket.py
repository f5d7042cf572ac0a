"""``WS /v1/stream``: the native protocol on a Starlette WebSocket, run by the session's runner."""

from __future__ import annotations

from starlette.websockets import WebSocket

from voxflow.connection.runner import run_connection
from voxflow.server.services import Services
from voxflow.transports.native.errors import http_error
from voxflow.transports.native.protocol import NativeProtocol
from voxflow.transports.websocket import refuse_while_draining, websocket_transport

__all__ = ["serve_native"]


async def serve_native(websocket: WebSocket, services: Services) -> None:
    if await refuse_while_draining(websocket, services.admission.draining, http_error):
        return
    binary = websocket.query_params.get("audio") == "binary"
    await websocket.accept()
    driver = services.new_driver("native")
    protocol = NativeProtocol(driver.session, driver.now, binary)
    await run_connection(
        driver, protocol, websocket_transport(websocket), services.runner_settings()
    )
