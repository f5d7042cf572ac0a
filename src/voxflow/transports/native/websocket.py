"""``WS /v1/stream``: the native protocol on a Starlette WebSocket, run by the session's runner."""

from __future__ import annotations

from functools import partial

from starlette.websockets import WebSocket

from voxflow.connection.gateway import Gateway
from voxflow.connection.runner import run_connection
from voxflow.session.dictionaries import locators_lexicon
from voxflow.transports.native.errors import http_error
from voxflow.transports.native.protocol import NativeProtocol
from voxflow.transports.owner import scope_owner
from voxflow.transports.websocket import refuse_while_draining, websocket_transport

__all__ = ["serve_native"]


async def serve_native(websocket: WebSocket, gateway: Gateway) -> None:
    if await refuse_while_draining(websocket, gateway.admission.draining, http_error):
        return
    binary = websocket.query_params.get("audio") == "binary"
    await websocket.accept()
    driver = gateway.new_driver("native", None)
    dictionaries = partial(locators_lexicon, gateway.dictionaries, scope_owner(websocket.scope))
    protocol = NativeProtocol(driver.session, driver.now, binary, dictionaries)
    await run_connection(driver, protocol, websocket_transport(websocket), gateway.runner_settings)
