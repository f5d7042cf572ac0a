"""The Cartesia-compatible endpoints: ``WS /tts/websocket`` (the protocol on the session's
runner) and ``POST /tts/bytes`` (``voxflow.transports.cartesia.http``).

A client written for Cartesia points its base URL at the server: ``http://HOST:PORT`` for the
HTTP API and LiveKit's plugin, ``ws://HOST:PORT`` as the SDK's ``websocket_base_url``, and
``ws://HOST:PORT/tts/websocket`` as Pipecat's ``url``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.websockets import WebSocket

from voxflow.connection.runner import run_connection
from voxflow.server.services import Services
from voxflow.session.errors import SessionError
from voxflow.transports.cartesia import errors as cartesia_errors
from voxflow.transports.cartesia import http as cartesia_http
from voxflow.transports.cartesia.http import BytesBody, error_response
from voxflow.transports.cartesia.protocol import CartesiaProtocol
from voxflow.transports.websocket import refuse_while_draining, websocket_transport

__all__ = ["mount_cartesia", "serve_cartesia"]

TRY_AGAIN_LATER = 1013  # the WebSocket close for a server that is still starting


async def serve_cartesia(websocket: WebSocket, services: Services) -> None:
    if await refuse_while_draining(
        websocket, services.admission.draining, cartesia_errors.http_error
    ):
        return
    await websocket.accept()
    driver = services.new_driver("cartesia_ws")
    protocol = CartesiaProtocol(driver.session, driver.now, services)
    await run_connection(
        driver, protocol, websocket_transport(websocket), services.runner_settings()
    )


def mount_cartesia(app: FastAPI) -> None:
    """Add the Cartesia-compatible endpoints to ``app`` (its lifespan sets
    ``app.state.services``)."""

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
        services: Services | None = getattr(request.app.state, "services", None)
        if services is None:
            return error_response(
                SessionError("service_unavailable", "the server is still starting")
            )
        body = BytesBody.model_validate(await request.body())
        return await cartesia_http.tts_bytes(services, body)

    @app.websocket("/tts/websocket")
    async def tts_websocket(websocket: WebSocket) -> None:
        services: Services | None = getattr(websocket.app.state, "services", None)
        if services is None:
            await websocket.close(TRY_AGAIN_LATER, "the server is still starting")
            return
        await serve_cartesia(websocket, services)
