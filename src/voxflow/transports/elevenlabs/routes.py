"""The ElevenLabs-compatible endpoints: the WebSocket protocol on the session's runner, and the
HTTP routes (``voxflow.transports.elevenlabs.http``)."""

from __future__ import annotations

from dataclasses import replace

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.websockets import WebSocket

from voxflow.session.runner import run_connection
from voxflow.session.services import Services
from voxflow.session.session import SessionError
from voxflow.transports.elevenlabs import http as elevenlabs_http
from voxflow.transports.elevenlabs.errors import TRY_AGAIN_LATER
from voxflow.transports.elevenlabs.http import SpeechBody, error_response
from voxflow.transports.elevenlabs.protocol import ElevenLabsProtocol, driver_contexts
from voxflow.transports.websocket import websocket_transport

__all__ = ["mount_elevenlabs", "serve_elevenlabs"]


async def serve_elevenlabs(
    websocket: WebSocket, services: Services, voice_id: str, multi: bool
) -> None:
    await websocket.accept()
    config = replace(services.session_config(), max_contexts=driver_contexts(services, multi))
    driver = services.new_driver(config)
    protocol = ElevenLabsProtocol(
        driver.session, driver.now, services, voice_id, websocket.query_params, multi
    )
    await run_connection(
        driver, protocol, websocket_transport(websocket), services.runner_settings()
    )


# -- routes ---------------------------------------------------------------------------------------


def mount_elevenlabs(app: FastAPI) -> None:
    """Add the ElevenLabs-compatible endpoints to ``app`` (its lifespan sets
    ``app.state.services``). ``GET /v1/voices`` stays the app's own; see
    ``elevenlabs_http.elevenlabs_voice_fields``."""

    def services_of(request: Request) -> Services | None:
        return getattr(request.app.state, "services", None)

    def starting() -> Response:
        return error_response(SessionError("service_unavailable", "the server is still starting"))

    async def speech(
        request: Request,
        voice_id: str,
        body: SpeechBody,
        output_format: str | None,
        stream: bool,
        timestamps: bool,
    ) -> Response:
        services = services_of(request)
        if services is None:
            return starting()
        return await elevenlabs_http.text_to_speech(
            services, voice_id, body, output_format, stream, timestamps
        )

    @app.post("/v1/text-to-speech/{voice_id}")
    async def convert(
        voice_id: str, body: SpeechBody, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, body, output_format, False, False)

    @app.post("/v1/text-to-speech/{voice_id}/stream")
    async def stream(
        voice_id: str, body: SpeechBody, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, body, output_format, True, False)

    @app.post("/v1/text-to-speech/{voice_id}/with-timestamps")
    async def convert_with_timestamps(
        voice_id: str, body: SpeechBody, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, body, output_format, False, True)

    @app.post("/v1/text-to-speech/{voice_id}/stream/with-timestamps")
    async def stream_with_timestamps(
        voice_id: str, body: SpeechBody, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, body, output_format, True, True)

    @app.get("/v2/voices")
    async def voices_v2(
        request: Request,
        search: str | None = None,
        page_size: int = 10,
        next_page_token: str | None = None,
    ) -> Response:
        services = services_of(request)
        if services is None:
            return starting()
        return elevenlabs_http.voices_v2(services, search, page_size, next_page_token)

    @app.get("/v1/voices/{voice_id}")
    async def voice(voice_id: str, request: Request) -> Response:
        services = services_of(request)
        if services is None:
            return starting()
        return elevenlabs_http.voice(services, voice_id)

    async def serve(websocket: WebSocket, voice_id: str, multi: bool) -> None:
        services: Services | None = getattr(websocket.app.state, "services", None)
        if services is None:
            await websocket.close(TRY_AGAIN_LATER, "the server is still starting")
            return
        await serve_elevenlabs(websocket, services, voice_id, multi)

    @app.websocket("/v1/text-to-speech/{voice_id}/stream-input")
    async def stream_input(websocket: WebSocket, voice_id: str) -> None:
        await serve(websocket, voice_id, False)

    @app.websocket("/v1/text-to-speech/{voice_id}/multi-stream-input")
    async def multi_stream_input(websocket: WebSocket, voice_id: str) -> None:
        await serve(websocket, voice_id, True)
