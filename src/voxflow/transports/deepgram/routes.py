"""The Deepgram Aura-compatible endpoints: ``WS /v1/speak`` on the session's runner, and
``POST /v1/speak`` (``voxflow.transports.deepgram.http``).

A WebSocket whose query string is refused, or that comes while the server is full, starting or
draining, is refused at the handshake as Deepgram refuses one: an HTTP error status with
Deepgram's error object as the body and the message in the ``dg-error`` header (through the ASGI
WebSocket denial response, which voxflow's server supports; a server without it gets a close
frame with the same code the open socket would get). An accepted one gets ``dg-request-id`` on
its handshake and the ``Metadata`` message before anything else.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.websockets import WebSocket

from voxflow.connection.gateway import Gateway, GatewayAccess
from voxflow.connection.runner import run_connection
from voxflow.connection.wire import PeerGone
from voxflow.session.admission import stream_slots
from voxflow.session.errors import SessionError
from voxflow.transports.close_codes import POLICY_VIOLATION
from voxflow.transports.deepgram import http as deepgram_http
from voxflow.transports.deepgram.errors import http_error, socket_error
from voxflow.transports.deepgram.http import SpeakBody, error_response, new_request_id
from voxflow.transports.deepgram.protocol import DeepgramProtocol, metadata
from voxflow.transports.deepgram.query import SpeakOptions, parse_speak_query
from voxflow.transports.websocket import websocket_transport

__all__ = ["mount_deepgram", "serve_deepgram"]

log = logging.getLogger(__name__)

_DENIAL_EXTENSION = "websocket.http.response"


def _admit(gateway: Gateway, websocket: WebSocket) -> SpeakOptions:
    """The connection's options, or the ``SessionError`` that refuses it at the handshake."""
    speech = parse_speak_query(gateway.context, websocket.query_params, websocket=True)
    # Deepgram refuses a connection over its concurrency limit at the handshake (429). A
    # stream is admitted for each turn, not the connection; admitting one and giving it back
    # refuses (and counts) a connection that could not speak now, with the usual retry hint.
    engine = gateway.context.voice(speech.voice).engine
    slots = stream_slots(engine, gateway.context.kokoro_slots)
    gateway.admission.release(gateway.admission.acquire(engine, slots, time.monotonic()))
    return speech


async def _refuse(websocket: WebSocket, error: SessionError, request_id: str) -> None:
    answer = http_error(error.code, error.message, request_id)
    # A header value is Latin-1; the message may quote a client's value in any script.
    reason = error.message.encode("ascii", "backslashreplace").decode("ascii")
    headers = {"dg-request-id": request_id, "dg-error": reason}
    if error.retry_after_ms is not None:
        headers["retry-after"] = str(max(1, round(error.retry_after_ms / 1000.0)))
    if _DENIAL_EXTENSION in websocket.scope.get("extensions", {}):
        response = JSONResponse(answer.body, status_code=answer.status, headers=headers)
        await websocket.send_denial_response(response)
        return
    close_code = socket_error(error.code, error.message).close_code
    await websocket.close(close_code or POLICY_VIOLATION, reason[:120])


async def serve_deepgram(websocket: WebSocket, gateway: Gateway) -> None:
    request_id = new_request_id()
    try:
        speech = _admit(gateway, websocket)
    except SessionError as error:
        await _refuse(websocket, error, request_id)
        return
    await websocket.accept(headers=[(b"dg-request-id", request_id.encode("ascii"))])
    driver = gateway.new_driver("deepgram_ws", None)
    protocol = DeepgramProtocol(
        driver.session, driver.now, speech, gateway.context.max_buffered_chars
    )
    transport = websocket_transport(websocket)
    try:
        await transport.send(metadata(request_id, speech))
    except PeerGone:
        log.info("the client left before its Metadata went out")
        await driver.close()
        return
    await run_connection(driver, protocol, transport, gateway.runner_settings)


# -- routes ---------------------------------------------------------------------------------------


def mount_deepgram(app: FastAPI, gateway_of: GatewayAccess) -> None:
    """Add the Deepgram-compatible endpoints to ``app``; ``gateway_of`` is None while the
    server starts."""

    def starting() -> SessionError:
        return SessionError("service_unavailable", "the server is still starting")

    # The body's schema for the API docs, since FastAPI does not read it.
    body_docs: dict[str, Any] = {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": SpeakBody.model_json_schema()}},
        }
    }

    @app.post("/v1/speak", openapi_extra=body_docs)
    async def speak(request: Request) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return error_response(starting(), new_request_id())
        # Read here rather than by FastAPI, so that a body that is not even JSON is answered in
        # Deepgram's shape too (FastAPI's is a 422 of its own).
        body = SpeakBody.model_validate(await request.body())
        return await deepgram_http.speak(gateway, request.query_params, body)

    @app.websocket("/v1/speak")
    async def speak_stream(websocket: WebSocket) -> None:
        gateway = gateway_of()
        if gateway is None:
            await _refuse(websocket, starting(), new_request_id())
            return
        await serve_deepgram(websocket, gateway)
