"""The ElevenLabs-compatible endpoints: the WebSocket protocol on the session's runner, and the
HTTP routes (``voxflow.transports.elevenlabs.http``)."""

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
from voxflow.transports.close_codes import TRY_AGAIN_LATER
from voxflow.transports.elevenlabs import dictionaries as elevenlabs_dictionaries
from voxflow.transports.elevenlabs import errors as elevenlabs_errors
from voxflow.transports.elevenlabs import http as elevenlabs_http
from voxflow.transports.elevenlabs.http import SpeechBody, error_response
from voxflow.transports.elevenlabs.protocol import ElevenLabsProtocol, driver_contexts
from voxflow.transports.owner import scope_owner
from voxflow.transports.websocket import refuse_while_draining, websocket_transport

__all__ = ["mount_elevenlabs", "serve_elevenlabs"]


async def serve_elevenlabs(
    websocket: WebSocket, gateway: Gateway, voice_id: str, multi: bool
) -> None:
    if await refuse_while_draining(
        websocket, gateway.admission.draining, elevenlabs_errors.http_error
    ):
        return
    await websocket.accept()
    driver = gateway.new_driver("elevenlabs_ws", driver_contexts(gateway.context, multi))
    protocol = ElevenLabsProtocol(
        driver.session,
        driver.now,
        gateway.context,
        voice_id,
        websocket.query_params,
        multi,
        partial(locators_lexicon, gateway.dictionaries, scope_owner(websocket.scope)),
    )
    await run_connection(driver, protocol, websocket_transport(websocket), gateway.runner_settings)


# -- routes ---------------------------------------------------------------------------------------


def mount_elevenlabs(app: FastAPI, gateway_of: GatewayAccess) -> None:
    """Add the ElevenLabs-compatible endpoints to ``app``; ``gateway_of`` is None while the
    server starts. ``GET /v1/voices`` stays the app's own; see
    ``elevenlabs_http.elevenlabs_voice_fields``."""

    def starting() -> Response:
        return error_response(SessionError("service_unavailable", "the server is still starting"))

    async def speech(
        request: Request,
        voice_id: str,
        output_format: str | None,
        stream: bool,
        timestamps: bool,
    ) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        # The body is read here rather than by FastAPI, so that a body that is not even JSON
        # is answered in ElevenLabs' shape too (FastAPI's is a 422 of its own).
        body = SpeechBody.model_validate(await request.body())
        return await elevenlabs_http.text_to_speech(
            gateway,
            voice_id,
            body,
            output_format,
            stream,
            timestamps,
            scope_owner(request.scope),
            request.query_params.get("enable_ssml_parsing", "").lower() in ("true", "1"),
        )

    # The body's schema for the API docs, since FastAPI does not read it.
    body_docs: dict[str, Any] = {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": SpeechBody.model_json_schema()}},
        }
    }

    @app.post("/v1/text-to-speech/{voice_id}", openapi_extra=body_docs)
    async def convert(
        voice_id: str, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, output_format, False, False)

    @app.post("/v1/text-to-speech/{voice_id}/stream", openapi_extra=body_docs)
    async def stream(voice_id: str, request: Request, output_format: str | None = None) -> Response:
        return await speech(request, voice_id, output_format, True, False)

    @app.post("/v1/text-to-speech/{voice_id}/with-timestamps", openapi_extra=body_docs)
    async def convert_with_timestamps(
        voice_id: str, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, output_format, False, True)

    @app.post("/v1/text-to-speech/{voice_id}/stream/with-timestamps", openapi_extra=body_docs)
    async def stream_with_timestamps(
        voice_id: str, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, output_format, True, True)

    @app.get("/v2/voices")
    async def voices_v2(
        search: str | None = None,
        page_size: int = 10,
        next_page_token: str | None = None,
    ) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        return elevenlabs_http.voices_v2(gateway.context, search, page_size, next_page_token)

    @app.get("/v1/voices/{voice_id}")
    async def voice(voice_id: str) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        return elevenlabs_http.voice(gateway.context, voice_id)

    # -- pronunciation dictionaries (elevenlabs_dictionaries) ---------------------------------

    dictionaries = "/v1/pronunciation-dictionaries"

    @app.post(f"{dictionaries}/add-from-file")
    async def add_from_file(request: Request) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        return await elevenlabs_dictionaries.add_from_file(
            gateway,
            scope_owner(request.scope),
            request.headers.get("content-type"),
            await request.body(),
        )

    @app.post(f"{dictionaries}/add-from-rules")
    async def add_from_rules(request: Request) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        return await elevenlabs_dictionaries.add_from_rules(
            gateway, scope_owner(request.scope), await request.body()
        )

    @app.get(dictionaries)
    async def list_dictionaries(
        request: Request, cursor: str | None = None, page_size: int | None = None
    ) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        return await elevenlabs_dictionaries.list_dictionaries(
            gateway, scope_owner(request.scope), cursor, page_size
        )

    @app.get(f"{dictionaries}/{{dictionary_id}}")
    async def get_dictionary(request: Request, dictionary_id: str) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        return await elevenlabs_dictionaries.get_dictionary(
            gateway, scope_owner(request.scope), dictionary_id
        )

    @app.get(f"{dictionaries}/{{dictionary_id}}/{{version_id}}/download")
    async def download_dictionary(
        request: Request, dictionary_id: str, version_id: str
    ) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        return await elevenlabs_dictionaries.download(
            gateway, scope_owner(request.scope), dictionary_id, version_id
        )

    @app.post(f"{dictionaries}/{{dictionary_id}}/add-rules")
    async def add_rules(request: Request, dictionary_id: str) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        return await elevenlabs_dictionaries.add_rules(
            gateway, scope_owner(request.scope), dictionary_id, await request.body()
        )

    @app.post(f"{dictionaries}/{{dictionary_id}}/remove-rules")
    async def remove_rules(request: Request, dictionary_id: str) -> Response:
        gateway = gateway_of()
        if gateway is None:
            return starting()
        return await elevenlabs_dictionaries.remove_rules(
            gateway, scope_owner(request.scope), dictionary_id, await request.body()
        )

    async def serve(websocket: WebSocket, voice_id: str, multi: bool) -> None:
        gateway = gateway_of()
        if gateway is None:
            await websocket.close(TRY_AGAIN_LATER, "the server is still starting")
            return
        await serve_elevenlabs(websocket, gateway, voice_id, multi)

    @app.websocket("/v1/text-to-speech/{voice_id}/stream-input")
    async def stream_input(websocket: WebSocket, voice_id: str) -> None:
        await serve(websocket, voice_id, False)

    @app.websocket("/v1/text-to-speech/{voice_id}/multi-stream-input")
    async def multi_stream_input(websocket: WebSocket, voice_id: str) -> None:
        await serve(websocket, voice_id, True)
