"""OpenAI-compatible ``POST /v1/audio/speech``: one context per request, audio streamed as rendered.

``response_format``: ``mp3``, ``opus`` (Ogg), ``aac`` (ADTS), ``flac``, ``wav`` (one header with
open-ended sizes, then the samples) and ``pcm`` (headerless 24 kHz s16le mono, as OpenAI's), all
encoded as the audio is rendered (``voxflow.audio.formats.openai_output_format``).
``stream_format=sse`` wraps the encoded audio in ``speech.audio.delta`` events and ends with
``speech.audio.done`` (``protocol``); the answer runs on the connection runner
(``transports.http_response``). OpenAI's voice names are accepted and mapped to the default voice so
clients that whitelist them work unchanged. A refused request is a ``SessionError``, answered
with OpenAI's error object (``errors.openai_error``).
"""

from __future__ import annotations

from typing import Literal

from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from voxflow.audio.formats import openai_output_format
from voxflow.session import options
from voxflow.session.services import Services
from voxflow.session.session import SessionError, StartOptions
from voxflow.transports.http_response import RunnerResponse
from voxflow.transports.openai.errors import openai_error
from voxflow.transports.openai.protocol import SpeechAudio, SpeechEvents

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


def error_response(error: SessionError) -> JSONResponse:
    """``error`` as OpenAI's error object."""
    answer = openai_error(error.code, error.message)
    return JSONResponse(answer.body, status_code=answer.status)


def resolve_voice(services: Services, name: str) -> str:
    """The voxflow voice ``name`` selects; OpenAI's own names select the default voice."""
    return options.resolve_voice(
        services.registry.get,
        name,
        services.default_voice,
        alias=lambda voice: voice.lower() in OPENAI_VOICES,
        hint="OpenAI voice names are accepted too",
    ).name


async def speech(request: SpeechRequest, services: Services) -> Response:
    try:
        return _speech(request, services)
    except SessionError as error:
        return error_response(error)


def _speech(request: SpeechRequest, services: Services) -> Response:
    fmt = options.output_format(request.response_format, openai_output_format)
    options.check_text(request.input, services.settings.max_message_chars)
    voice = resolve_voice(services, request.voice)
    settings = options.voice_settings(speed=request.speed, seed=request.seed)
    driver = services.new_request_driver()
    now = driver.now()
    driver.session.start(
        _CONTEXT,
        StartOptions(voice=voice, output_format=fmt.name, settings=settings, paced=False),
        now,
    )
    driver.session.text(_CONTEXT, request.input, now)
    driver.session.end(_CONTEXT, now)
    protocol = (
        SpeechEvents(request.input)
        if request.stream_format == "sse"
        else SpeechAudio(fmt.media_type)
    )
    return RunnerResponse(driver, protocol, services.runner_settings())
