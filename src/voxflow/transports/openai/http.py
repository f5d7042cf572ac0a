"""OpenAI-compatible ``POST /v1/audio/speech``: one context per request, audio streamed as rendered.

``response_format``: ``mp3``, ``opus`` (Ogg), ``aac`` (ADTS), ``flac``, ``wav`` (one header with
open-ended sizes, then the samples) and ``pcm`` (headerless 24 kHz s16le mono, as OpenAI's), all
encoded as the audio is rendered (``voxflow.audio.formats.openai_output_format``).
``stream_format=sse`` wraps the encoded audio in ``speech.audio.delta`` events and ends with
``speech.audio.done``. OpenAI's voice names are accepted and mapped to the default voice so
clients that whitelist them work unchanged.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Literal

from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from voxflow.audio.formats import UnsupportedFormatError, openai_output_format
from voxflow.engines.base import VoiceNotFoundError, VoiceSettings
from voxflow.session.driver import SessionDriver, request_events
from voxflow.session.events import AudioOut
from voxflow.session.services import Services
from voxflow.session.session import StartOptions

OPENAI_VOICES = (
    "alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse",
    "marin", "cedar",
)  # fmt: skip
_CONTEXT = "speech"


class SpeechRequest(BaseModel):
    model: str = "voxflow"
    input: str = Field(min_length=1)
    voice: str = "alloy"
    response_format: str = "mp3"
    speed: float = Field(default=1.0, ge=0.25, le=4.0)
    stream_format: Literal["audio", "sse"] = "audio"
    instructions: str | None = None  # accepted, not used: Piper voices take no instructions
    seed: int | None = Field(default=None, ge=0)  # voxflow extension: reproducible audio


class RequestError(ValueError):
    """A bad request, answered in OpenAI's error shape so SDKs show the message."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param

    def response(self) -> JSONResponse:
        return JSONResponse(
            {
                "error": {
                    "message": str(self),
                    "type": "invalid_request_error",
                    "param": self.param,
                    "code": None,
                }
            },
            status_code=400,
        )


def resolve_voice(services: Services, name: str) -> str:
    try:
        return services.registry.get(name).name
    except VoiceNotFoundError as error:
        if name.lower() in OPENAI_VOICES:
            return services.default_voice
        raise RequestError(f"{error}; OpenAI voice names are accepted too", "voice") from error


async def speech(request: SpeechRequest, services: Services) -> Response:
    try:
        return _speech(request, services)
    except RequestError as error:
        return error.response()


def _speech(request: SpeechRequest, services: Services) -> Response:
    try:
        fmt = openai_output_format(request.response_format)
    except UnsupportedFormatError as error:
        raise RequestError(str(error), "response_format") from error
    if len(request.input) > services.settings.max_message_chars:
        raise RequestError(
            f"input is longer than {services.settings.max_message_chars} characters", "input"
        )
    voice = resolve_voice(services, request.voice)
    driver = services.new_driver()
    now = driver.now()
    driver.session.start(
        _CONTEXT,
        StartOptions(
            voice=voice,
            output_format=fmt.name,
            settings=VoiceSettings(speed=request.speed, seed=request.seed),
            paced=False,
        ),
        now,
    )
    driver.session.text(_CONTEXT, request.input, now)
    driver.session.end(_CONTEXT, now)

    if request.stream_format == "sse":
        body = _sse(driver, request.input)
        media_type = "text/event-stream"
    else:
        body = _audio(driver)
        media_type = fmt.media_type
    return StreamingResponse(body, media_type=media_type, headers={"Cache-Control": "no-store"})


async def _events(driver: SessionDriver) -> AsyncIterator[AudioOut]:
    async with contextlib.aclosing(request_events(driver)) as events:
        async for event in events:
            if isinstance(event, AudioOut):
                yield event


async def _audio(driver: SessionDriver) -> AsyncIterator[bytes]:
    async for event in _events(driver):
        yield event.data


async def _sse(driver: SessionDriver, text: str) -> AsyncIterator[bytes]:
    audio_ms = 0.0
    async for event in _events(driver):
        audio_ms += event.duration_ms
        payload = {"type": "speech.audio.delta", "audio": base64.b64encode(event.data).decode()}
        yield f"data: {json.dumps(payload)}\n\n".encode()
    # Token counts are estimates (OpenAI bills tokens; we have characters and samples).
    input_tokens = max(1, len(text) // 4)
    output_tokens = max(1, round(audio_ms / 40))
    done = {
        "type": "speech.audio.done",
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
    }
    yield f"data: {json.dumps(done)}\n\n".encode()
