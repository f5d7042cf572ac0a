"""The Cartesia-compatible endpoints: ``WS /tts/websocket`` (the protocol on the session's
runner) and ``POST /tts/bytes`` (``voxflow.transports.cartesia.http``).

A client written for Cartesia points its base URL at the server: ``http://HOST:PORT`` for the
HTTP API and LiveKit's plugin, ``ws://HOST:PORT`` as the SDK's ``websocket_base_url``, and
``ws://HOST:PORT/tts/websocket`` as Pipecat's ``url``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.websockets import WebSocket

from voxflow.connection.gateway import Gateway, GatewayAccess
from voxflow.connection.runner import run_connection
from voxflow.session.dictionaries import locators_lexicon
from voxflow.session.errors import SessionError
from voxflow.transports.cartesia import errors as cartesia_errors
from voxflow.transports.cartesia import http as cartesia_http
from voxflow.transports.cartesia.http import BytesBody, error_response
from voxflow.transports.cartesia.protocol import CartesiaProtocol
from voxflow.transports.close_codes import TRY_AGAIN_LATER
from voxflow.transports.owner import scope_owner
from voxflow.transports.websocket import refuse_while_draining, websocket_transport

__all__ = ["mount_cartesia", "serve_cartesia"]


async def serve_cartesia(websocket: WebSocket, gateway: Gateway) -> None:
    if await refuse_while_draining(
        websocket, gateway.admission.draining, cartesia_errors.http_error
    ):
        return
    await websocket.accept()
    driver = gateway.new_driver("cartesia_ws", None)
    protocol = CartesiaProtocol(
        driver.session,
        driver.now,
        gateway.context,
        partial(locators_lexicon, gateway.dictionaries, scope_owner(websocket.scope)),
    )
    await run_connection(driver, protocol, websocket_transport(websocket), gateway.runner_settings)


def mount_cartesia(app: FastAPI, gateway_of: GatewayAccess) -> None:
    """Add the Cartesia-compatible endpoints to ``app``; ``gateway_of`` is None while the
    server starts."""

    # The body is read here rather than by FastAPI, so that a body that is not even JSON is
    # answered in Cartesia's shape too (FastAPI's is a 422 of its own); its schema stays in the
    # API docs.
    body_docs: dict[str, Any] = {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": BytesBody.model_json_schema()}},
        }
    }

    @app.post("/tts/bytes", openapi_extra=body_docs)
    async def tts_bytes(request: Request) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return error_response(
                SessionError("service_unavailable", "the server is still starting")
            )
        body = BytesBody.model_validate(await request.body())
        return await cartesia_http.tts_bytes(gateway, body, scope_owner(request.scope))

    @app.websocket("/tts/websocket")
    async def tts_websocket(websocket: WebSocket) -> None:
        gateway = gateway_of()
        if gateway is None:
            await websocket.close(TRY_AGAIN_LATER, "the server is still starting")
            return
        await serve_cartesia(websocket, gateway)
