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

from dataclasses import dataclass
from typing import Literal

from fastapi.responses import JSONResponse, Response
from pydantic import Field

from voxflow.audio.formats import OutputFormat, openai_output_format
from voxflow.connection.gateway import Gateway
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.engines.base import VoiceSettings
from voxflow.session import options
from voxflow.session.errors import SessionError
from voxflow.session.options import StartOptions
from voxflow.text.ssml import SSML, SsmlDialect
from voxflow.transports.http_response import speak_request
from voxflow.transports.json_body import BodyError, RequestBody
from voxflow.transports.openai.errors import openai_error
from voxflow.transports.openai.protocol import SpeechAudio, SpeechEvents

OPENAI_VOICES = (
    "alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse",
    "marin", "cedar",
)  # fmt: skip


class SpeechRequest(RequestBody):
    """The request body: types here (strict: ``"speed": true`` is no number), ranges in
    ``voxflow.session.options``; a refused body is answered as OpenAI's error (``checked``)."""

    model: str = "voxflow"
    input: str = Field(min_length=1)
    voice: str = "alloy"
    response_format: str = "mp3"
    speed: float = 1.0  # 0.25 to 4.0 (options.voice_settings)
    stream_format: Literal["audio", "sse"] = "audio"
    instructions: str | None = None  # accepted, not used: Piper voices take no instructions
    seed: int | None = None  # voxflow extension: reproducible audio
    # voxflow extension: "ssml" reads ``input`` as SSML (voxflow.text.ssml); "text" is plain.
    text_format: Literal["text", "ssml"] = "text"


@dataclass(frozen=True)
class SpeechPlan:
    """A checked request: what its one context speaks, and how."""

    text: str
    voice: str
    output_format: OutputFormat
    settings: VoiceSettings
    sse: bool
    markup: SsmlDialect | None = None


def error_response(error: SessionError) -> JSONResponse:
    """``error`` as OpenAI's error object (``param``: the body field at fault, where known)."""
    param = error.field if isinstance(error, BodyError) else None
    answer = openai_error(error.code, error.message, param)
    return JSONResponse(answer.body, status_code=answer.status)


def resolve_voice(context: ProtocolContext, name: str) -> str:
    """The voxflow voice ``name`` selects; OpenAI's own names select the default voice."""
    return options.resolve_voice(
        context.voice,
        name,
        context.default_voice,
        alias=lambda voice: voice.lower() in OPENAI_VOICES,
        hint="OpenAI voice names are accepted too",
    ).name


def plan(request: SpeechRequest, context: ProtocolContext) -> SpeechPlan:
    """Check a request (no I/O); ``SessionError`` (a ``BodyError`` for the body's own types) if
    it is refused."""
    request = request.checked()
    fmt = options.output_format(request.response_format, openai_output_format)
    options.check_text(request.input, context.max_message_chars)
    text = options.clean_text(request.input)
    voice = resolve_voice(context, request.voice)
    settings = options.voice_settings(speed=request.speed, seed=request.seed)
    markup = SSML if request.text_format == "ssml" else None
    return SpeechPlan(text, voice, fmt, settings, request.stream_format == "sse", markup)


async def speech(request: SpeechRequest, gateway: Gateway) -> Response:
    try:
        checked = plan(request, gateway.context)
    except SessionError as error:
        return error_response(error)
    start = StartOptions(
        voice=checked.voice,
        output_format=checked.output_format.name,
        settings=checked.settings,
        markup=checked.markup,
    )
    protocol = (
        SpeechEvents(checked.text) if checked.sse else SpeechAudio(checked.output_format.media_type)
    )
    return speak_request(gateway, "openai", start, checked.text, protocol)
