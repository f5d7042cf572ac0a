"""ElevenLabs-compatible HTTP text-to-speech and voice listing.

``POST /v1/text-to-speech/{voice_id}`` and ``.../stream`` answer raw audio, streamed as it is
rendered; ``.../with-timestamps`` answers one JSON object and ``.../stream/with-timestamps`` one
JSON object per line, each with base64 audio and the characters first heard in it. HTTP alignment
uses ElevenLabs' HTTP names (``characters``, ``character_start_times_seconds``,
``character_end_times_seconds``) and times in seconds from the start of the request's audio,
unlike the WebSocket's per-chunk milliseconds. The bodies are ``http_protocol``'s; they run on
the connection runner (``transports.http_response``).

Shared with the WebSocket transport: voice id resolution (a voxflow voice name, or an
ElevenLabs-style 20-character id, which maps to the default voice), ``voice_settings`` parsing,
``language_code`` (the body's here, the query string's there: the voice must speak it) and the
output format (ElevenLabs' default, ``mp3_44100_128``, when none is named); the checks themselves
are ``voxflow.session.options``'. Errors are ``SessionError``s, answered in ElevenLabs'
HTTP shape, ``{"detail": {"status": ..., "message": ...}}`` (``errors.http_error``), so its SDKs
surface the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Any

from fastapi.responses import JSONResponse, Response
from pydantic import Field

from voxflow.audio.formats import OutputFormat
from voxflow.connection.gateway import Gateway
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.engines.base import VoiceInfo, VoiceSettings
from voxflow.session import options
from voxflow.session.dictionaries import (
    Dictionaries,
    locators_lexicon,
    no_dictionaries,
    parse_locators,
)
from voxflow.session.errors import SessionError
from voxflow.session.options import StartOptions
from voxflow.text.lexicon import Lexicon
from voxflow.text.normalize.normalizer import NormalizationMode
from voxflow.text.ssml import SsmlDialect, SsmlError, written_text
from voxflow.transports.elevenlabs.alignment import ChunkAlignment
from voxflow.transports.elevenlabs.errors import http_error
from voxflow.transports.elevenlabs.http_protocol import TtsAudio, TtsLines, TtsWhole
from voxflow.transports.elevenlabs.models import MODELS as ELEVENLABS_MODELS
from voxflow.transports.http_response import speak_request
from voxflow.transports.json_body import RequestBody
from voxflow.transports.languages import bcp47
from voxflow.transports.request_protocol import RequestProtocol

ELEVENLABS_DEFAULT_FORMAT = "mp3_44100_128"
# ``enable_ssml_parsing``: breaks of up to 3 s, as ElevenLabs allows; text from an LLM keeps its
# bare "&" and "<" as text.
SSML_DIALECT = SsmlDialect(max_break_ms=3000.0, lenient=True)
# ElevenLabs voice ids are 20 alphanumeric characters (e.g. "21m00Tcm4TlvDq8ikWAM").
ELEVENLABS_VOICE_ID = re.compile(r"[A-Za-z0-9]{20}")


def error_response(error: SessionError) -> JSONResponse:
    """``error`` in ElevenLabs' HTTP shape."""
    answer = http_error(error.code, error.message)
    return JSONResponse(answer.body, status_code=answer.status)


# -- shared with the WebSocket transport ----------------------------------------------------------


def resolve_voice_id(context: ProtocolContext, voice_id: str) -> str:
    """The voxflow voice for an ElevenLabs ``voice_id``.

    A voxflow voice name selects that voice. Clients written for ElevenLabs carry opaque ids for
    voices that do not exist here; an id of ElevenLabs' shape maps to the default voice so they
    work unchanged. Anything else is a typo: ``unknown_voice`` (ElevenLabs' ``voice_not_found``).
    """
    return options.resolve_voice(
        context.voice,
        voice_id,
        context.default_voice,
        alias=lambda name: ELEVENLABS_VOICE_ID.fullmatch(name) is not None,
        hint="ElevenLabs-style 20-character ids map to the default voice",
    ).name


def check_language_code(context: ProtocolContext, voice: str, raw: str | None) -> str | None:
    """ElevenLabs' ``language_code`` (ISO 639-1, ``ja``; a locale such as ``en-GB`` too), which
    ``voice`` must speak: ``unsupported_language`` otherwise, ``invalid_language`` for a value
    that is no language code. ElevenLabs refuses a code its model cannot enforce with a 400 as
    well. Absent or empty: the voice's own language, as without the field."""
    if not raw:
        return None
    options.check_language(context.voice(voice), raw)
    return raw


def check_output_format(name: str | None) -> OutputFormat:
    """The output format asked for; absent means ElevenLabs' default, mp3_44100_128."""
    return options.output_format(name or ELEVENLABS_DEFAULT_FORMAT)


def normalization_mode(raw: str | None) -> NormalizationMode:
    """ElevenLabs' ``apply_text_normalization`` (``auto``, ``on``, ``off``; absent: ``auto``)."""
    return options.normalization_mode(raw)


def voice_settings(raw: object, seed: int | None) -> VoiceSettings:
    """``VoiceSettings`` from ElevenLabs' ``voice_settings``: only ``speed`` applies to Piper;
    stability, similarity_boost, style and use_speaker_boost are accepted and ignored."""
    speed = voice_settings_speed(raw)
    return options.voice_settings(speed=1.0 if speed is None else speed, seed=seed)


def voice_settings_speed(raw: object) -> float | None:
    """The ``speed`` of ElevenLabs' ``voice_settings`` (None: not given)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SessionError("invalid_voice_settings", "voice_settings must be an object")
    return options.finite_number(raw.get("speed"), "voice_settings.speed", "invalid_voice_settings")


def ws_alignment(
    alignment: ChunkAlignment, from_context_start: bool = False
) -> dict[str, Any] | None:
    """ElevenLabs' WebSocket alignment: times in whole ms from the start of the chunk, as its
    specification says, or from the start of the context's audio (``sync_alignment=true``)."""
    if not alignment.chars:
        return None
    starts = (
        alignment.absolute_starts_ms() if from_context_start else alignment.relative_starts_ms()
    )
    return {
        "chars": [c.char for c in alignment.chars],
        "charStartTimesMs": starts,
        "charDurationsMs": alignment.durations_ms(),
    }


# -- voices ---------------------------------------------------------------------------------------


_ENGINE_NAMES = {"piper": "Piper", "kokoro": "Kokoro-82M"}


def elevenlabs_voice_fields(info: VoiceInfo, default: bool) -> dict[str, Any]:
    """ElevenLabs ``Voice`` fields for one voice, to merge into voxflow's own voice objects.

    ``name`` is the voxflow voice name, as in voxflow's listing, so the merged object is valid
    for both clients; ``voice_id`` is that name too, which ``/v1/text-to-speech/{voice_id}``
    accepts. Its language is in ``labels`` and, as ElevenLabs lists a voice's languages, in
    ``verified_languages`` (the ``language_code`` a request with it may give).
    """
    language = bcp47(info.language)
    primary = language.split("-")[0]
    labels = {"language": primary, "locale": language, "engine": info.engine}
    if default:
        labels["default"] = "true"
    return {
        "voice_id": info.name,
        "name": info.name,
        "category": "premade",
        "labels": labels,
        "description": f"{_ENGINE_NAMES.get(info.engine, info.engine)} voice {info.name} "
        f"({language}, {info.sample_rate} Hz)",
        "preview_url": None,
        "available_for_tiers": [],
        "settings": None,
        "high_quality_base_model_ids": [],
        "is_owner": False,
        "is_legacy": False,
        "verified_languages": [
            {
                "language": primary,
                "model_id": ELEVENLABS_MODELS[0][0],
                "accent": None,
                "locale": language,
                "preview_url": None,
            }
        ],
    }


def _voice(context: ProtocolContext, info: VoiceInfo) -> dict[str, Any]:
    default = info.name == context.default_voice
    return {
        **elevenlabs_voice_fields(info, default),
        "language": info.language,
        "sample_rate": info.sample_rate,
        "source": info.source,
        "speakers": list(info.speakers),
        "default": default,
    }


def voices_v2(
    context: ProtocolContext, search: str | None, page_size: int, next_page_token: str | None
) -> Response:
    """``GET /v2/voices``: ElevenLabs' paginated listing (``search`` matches the name)."""
    if not 1 <= page_size <= 100:
        return error_response(
            SessionError("invalid_page_size", "page_size must be between 1 and 100")
        )
    try:
        start = int(next_page_token or 0)
    except ValueError:
        return error_response(SessionError("invalid_page_token", "next_page_token is not valid"))
    voices = [v for v in context.voices() if not search or search.lower() in v.name.lower()]
    page = voices[start : start + page_size]
    more = start + page_size < len(voices)
    return JSONResponse(
        {
            "voices": [_voice(context, v) for v in page],
            "has_more": more,
            "total_count": len(voices),
            "next_page_token": str(start + page_size) if more else None,
        }
    )


def voice(context: ProtocolContext, voice_id: str) -> Response:
    """``GET /v1/voices/{voice_id}``; an ElevenLabs-style id describes the default voice."""
    try:
        name = resolve_voice_id(context, voice_id)
    except SessionError as error:
        return error_response(error)
    return JSONResponse({**_voice(context, context.voice(name)), "voice_id": voice_id})


# -- text to speech -------------------------------------------------------------------------------


class SpeechBody(RequestBody):
    """The request body; fields voxflow cannot use are accepted and ignored. Types here (strict),
    ranges in ``voxflow.session.options``; a refused body is answered in ElevenLabs' shape
    (``checked``)."""

    text: str = Field(min_length=1)
    model_id: str | None = None  # informational: there is one engine
    language_code: str | None = None  # the voice must speak it (check_language_code)
    voice_settings: dict[str, Any] | None = None
    seed: int | None = None  # 0 to 4,294,967,295 (options.voice_settings)
    # Dictionaries of this server (transports.elevenlabs.dictionaries), applied in order.
    pronunciation_dictionary_locators: list[Any] | None = None
    # Request stitching has no equivalent here.
    previous_text: str | None = None
    next_text: str | None = None
    apply_text_normalization: str | None = None
    enable_ssml_parsing: bool | None = None  # the query's ``enable_ssml_parsing`` too


@dataclass(frozen=True)
class TtsPlan:
    """A checked request: what its one context speaks, and how."""

    text: str
    voice: str
    output_format: OutputFormat
    settings: VoiceSettings
    normalization: NormalizationMode
    lexicon: Lexicon | None = None  # of the request's pronunciation dictionaries
    markup: SsmlDialect | None = None  # enable_ssml_parsing
    written: str = ""  # the text as alignments index it (markup left out)
    language: str | None = None  # language_code, which the voice speaks


def plan(
    context: ProtocolContext,
    voice_id: str,
    body: SpeechBody,
    output_format: str | None,
    dictionaries: Dictionaries = no_dictionaries,
    ssml: bool = False,
) -> TtsPlan:
    """Check a request; ``SessionError`` if it is refused. ``dictionaries`` gives the lexicon
    of the request's locators (it may read the dictionary store); ``ssml``: the query's
    ``enable_ssml_parsing``."""
    body = body.checked()
    fmt = check_output_format(output_format)
    voice_name = resolve_voice_id(context, voice_id)
    language = check_language_code(context, voice_name, body.language_code)
    settings = voice_settings(body.voice_settings, body.seed)
    normalization = normalization_mode(body.apply_text_normalization)
    options.check_text(body.text, context.max_message_chars)
    # Cleaned before anything uses it: the alignment's characters are the text's.
    text = options.clean_text(body.text)
    lexicon = dictionaries(parse_locators(body.pronunciation_dictionary_locators))
    markup = SSML_DIALECT if ssml or body.enable_ssml_parsing else None
    written = text
    if markup is not None:
        try:
            written = written_text(text, markup)
        except SsmlError as error:
            raise SessionError("invalid_ssml", str(error)) from None
    return TtsPlan(
        text, voice_name, fmt, settings, normalization, lexicon, markup, written, language
    )


async def text_to_speech(
    gateway: Gateway,
    voice_id: str,
    body: SpeechBody,
    output_format: str | None,
    stream: bool,
    timestamps: bool,
    owner: str = "",
    ssml: bool = False,
) -> Response:
    """The four ``/v1/text-to-speech/{voice_id}...`` endpoints; ``owner`` (``transports.owner``)
    is whose pronunciation dictionaries the request may name; ``ssml``: the query's
    ``enable_ssml_parsing``."""
    try:
        checked = plan(
            gateway.context,
            voice_id,
            body,
            output_format,
            partial(locators_lexicon, gateway.dictionaries, owner),
            ssml,
        )
    except SessionError as error:
        return error_response(error)
    start = StartOptions(
        voice=checked.voice,
        output_format=checked.output_format.name,
        settings=checked.settings,
        normalization=checked.normalization,
        lexicon=checked.lexicon,
        markup=checked.markup,
        language=checked.language,
    )
    protocol: RequestProtocol
    if not timestamps:
        protocol = TtsAudio(checked.output_format.media_type)
    elif stream:
        protocol = TtsLines(checked.written)
    else:
        protocol = TtsWhole(checked.written)
    return speak_request(gateway, "elevenlabs_http", start, checked.text, protocol)
