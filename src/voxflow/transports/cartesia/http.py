"""Cartesia-compatible ``POST /tts/bytes``: one transcript's audio, streamed as it is rendered.

The body is Cartesia's (``model_id``, ``transcript``, ``voice``, ``output_format`` with
container ``raw``, ``wav`` or ``mp3``, ``language``, ``generation_config``, ``speed``,
``normalization``; ``fields`` reads them). ``language`` (or ``locale``) must name a language the
voice speaks. The answer runs on the connection runner
(``transports.http_response``): a refusal before the audio starts is Cartesia's error object with
its HTTP status (``errors.http_error``), a failure after it cuts the body. ``pcm_f32le`` is
converted from the session's 16-bit PCM as it goes out (``samples``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from fastapi.responses import JSONResponse, Response
from pydantic import Field

from voxflow.connection.gateway import Gateway
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.engines.base import VoiceSettings
from voxflow.session import options
from voxflow.session.dictionaries import Dictionaries, locators_lexicon, no_dictionaries
from voxflow.session.errors import SessionError
from voxflow.session.events import AudioOut
from voxflow.session.options import StartOptions
from voxflow.text.lexicon import Lexicon
from voxflow.text.normalize.normalizer import NormalizationMode
from voxflow.text.ssml import CARTESIA_TAGS
from voxflow.transports.cartesia import fields
from voxflow.transports.cartesia.errors import http_error
from voxflow.transports.cartesia.samples import Float32Samples
from voxflow.transports.http_response import speak_request
from voxflow.transports.json_body import RequestBody
from voxflow.transports.request_protocol import ErrorAnswer, RequestProtocol

__all__ = ["BytesBody", "BytesPlan", "TtsBytes", "error_response", "plan", "tts_bytes"]


def error_response(error: SessionError) -> JSONResponse:
    """``error`` in Cartesia's HTTP shape."""
    answer = http_error(error.code, error.message)
    return JSONResponse(answer.body, status_code=answer.status)


class BytesBody(RequestBody):
    """The request body: the strings are typed here; the objects (voice, output_format,
    generation_config) and every range are ``fields``' and ``voxflow.session.options``' to
    check. Fields voxflow has no use for are accepted and ignored."""

    transcript: str = Field(min_length=1)
    model_id: str | None = None  # informational: there is one engine
    voice: Any = None  # an id, or {"mode": "id", "id": ...}; absent: the default voice
    output_format: Any = None
    language: str | None = None  # the voice must speak it (fields.language)
    locale: str | None = None  # the same, Cartesia's newer name
    generation_config: Any = None
    speed: Any = None
    normalization: str | None = None
    pronunciation_dict_id: str | None = None
    save: bool | None = None  # nothing is stored here


@dataclass(frozen=True)
class BytesPlan:
    """A checked request: what its one context speaks, and how."""

    text: str
    voice: str
    audio: fields.AudioFormat
    settings: VoiceSettings
    normalization: NormalizationMode
    lexicon: Lexicon | None  # of its pronunciation_dict_id
    language: str | None = None  # language or locale, which the voice speaks


def plan(
    context: ProtocolContext, body: BytesBody, dictionaries: Dictionaries = no_dictionaries
) -> BytesPlan:
    """Check a request; ``SessionError`` if it is refused. ``dictionaries`` gives the lexicon of
    its ``pronunciation_dict_id`` (it may read the dictionary store)."""
    body = body.checked()
    audio = fields.audio_format(body.output_format, fields.HTTP_CONTAINERS)
    voice = fields.resolve_voice(context, body.voice)
    language = fields.language(context, voice, {"language": body.language, "locale": body.locale})
    settings = fields.speed_settings(
        {"generation_config": body.generation_config, "speed": body.speed, "voice": body.voice}
    )
    mode = fields.normalization(body.normalization)
    options.check_text(body.transcript, context.max_message_chars)
    lexicon = fields.dictionary_lexicon(body.pronunciation_dict_id, dictionaries)
    text = options.clean_text(body.transcript)
    return BytesPlan(text, voice, audio, settings, mode, lexicon, language)


class TtsBytes(RequestProtocol):
    """The audio bytes, in the requested format; refusals in Cartesia's shape."""

    def __init__(self, audio: fields.AudioFormat) -> None:
        super().__init__(audio.media_type)
        self._float32 = Float32Samples() if audio.float32 else None

    def audio(self, event: AudioOut) -> Sequence[bytes]:
        if self._float32 is None:
            return (event.data,)
        return (self._float32.convert(event.data),)

    def error(self, code: str, message: str) -> ErrorAnswer:
        answer = http_error(code, message)
        return ErrorAnswer.json(answer.status, answer.body)


async def tts_bytes(gateway: Gateway, body: BytesBody, owner: str) -> Response:
    """``POST /tts/bytes`` of ``owner`` (``voxflow.transports.owner``)."""
    try:
        checked = plan(
            gateway.context, body, partial(locators_lexicon, gateway.dictionaries, owner)
        )
    except SessionError as error:
        return error_response(error)
    start = StartOptions(
        voice=checked.voice,
        output_format=checked.audio.name,
        settings=checked.settings,
        normalization=checked.normalization,
        lexicon=checked.lexicon,
        markup=CARTESIA_TAGS,
        language=checked.language,
    )
    return speak_request(gateway, "cartesia_http", start, checked.text, TtsBytes(checked.audio))
