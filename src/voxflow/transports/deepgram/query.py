"""The query string of Deepgram's ``/v1/speak`` (WebSocket and HTTP), checked once (no I/O).

``model`` picks the voice: a voxflow voice name selects it; a Deepgram Aura model name
(``aura-asteria-en``, ``aura-2-thalia-en``) selects a voice of the language its last part names
(Deepgram has no language field: the model carries it), the default voice when it speaks that
language and otherwise the first voice that does, so clients written for Deepgram work unchanged
(as ElevenLabs' voice ids and OpenAI's voice names do). A model of a language no voice speaks
(``aura-2-agustina-es``) is ``unsupported_language``; anything else is refused with Deepgram's
message for an unknown model. ``encoding``, ``sample_rate``,
``container`` and ``bit_rate`` pick one of voxflow's output formats
(``voxflow.audio.formats``): the WebSocket streams raw ``linear16``, ``mulaw`` or ``alaw``; HTTP
also answers ``flac``, ``mp3``, ``opus`` (Ogg) and ``aac``. ``speed`` is the voice's speed.
``mip_opt_out`` and ``tag`` are accepted and ignored; the checks themselves are
``voxflow.session.options``'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from voxflow.audio.formats import OutputFormat
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.engines.base import VoiceInfo, VoiceNotFoundError, VoiceSettings
from voxflow.session import options
from voxflow.session.errors import SessionError
from voxflow.session.options import shown
from voxflow.text.language import locale_matches

__all__ = [
    "DEFAULT_MODEL",
    "HTTP_ENCODINGS",
    "WS_ENCODINGS",
    "SpeakOptions",
    "parse_speak_query",
    "resolve_model",
]

DEFAULT_MODEL = "aura-asteria-en"  # Deepgram's default when no model is named
WS_ENCODINGS = ("linear16", "mulaw", "alaw")
HTTP_ENCODINGS = (*WS_ENCODINGS, "flac", "mp3", "opus", "aac")

# Deepgram's model names: aura-<voice>-<lang> and aura-2-<voice>-<lang>.
_AURA_MODEL = re.compile(r"aura(-[0-9]+)?-[a-z]+-(?P<language>[a-z]{2})")
_INTEGER = re.compile(r"[0-9]{1,9}")  # a decimal integer in ASCII, never "1_0" or " 7"
_DECIMAL = re.compile(r"[0-9]{1,3}(\.[0-9]{1,6})?")  # a speed such as 1, 0.9 or 1.25

# Deepgram's default sample rate for each encoding it lets the client choose one for.
_DEFAULT_RATES: Mapping[str, int] = {"linear16": 24000, "mulaw": 8000, "alaw": 8000, "flac": 48000}
_COMPANDED: Mapping[str, str] = {"mulaw": "ulaw", "alaw": "alaw"}
# The lossy codecs: voxflow's variants as (name prefix, kbps), the default first. Deepgram fixes
# their sample rate itself, so ``sample_rate`` does not apply; ``bit_rate`` picks the variant.
_LOSSY: Mapping[str, tuple[tuple[str, int], ...]] = {
    "mp3": (("mp3_22050", 32), ("mp3_24000", 48)),
    "opus": tuple(("opus_48000", kbps) for kbps in (32, 64, 96, 128, 192)),
    "aac": (("aac_24000", 64), ("aac_44100", 128)),
}
# The containers each encoding comes in over HTTP, Deepgram's default first.
_CONTAINERS: Mapping[str, tuple[str, ...]] = {
    "linear16": ("wav", "none"),
    "mulaw": ("none",),
    "alaw": ("none",),
    "flac": ("none",),
    "mp3": ("none",),
    "opus": ("ogg",),
    "aac": ("none",),
}


@dataclass(frozen=True)
class SpeakOptions:
    """What the query string sets for the connection's (or the request's) speech."""

    model: str  # as the client named it
    voice: str  # the voxflow voice speaking it
    output_format: OutputFormat
    settings: VoiceSettings
    language: str | None = None  # an Aura model's language, which the voice speaks


def resolve_model(context: ProtocolContext, model: str | None) -> tuple[str, str | None]:
    """The voxflow voice for a Deepgram ``model``, and the language an Aura model name asks
    for (None for a voxflow voice name)."""
    name = model or DEFAULT_MODEL
    voice = options.resolve_voice(
        context.voice,
        name,
        context.default_voice,
        alias=lambda alias: _AURA_MODEL.fullmatch(alias) is not None,
        hint="No such model/version combination found; Deepgram Aura model names "
        "(aura-asteria-en, aura-2-thalia-en) select a voice of their language",
    )
    aura = _AURA_MODEL.fullmatch(name)
    if aura is None or _named(context, name):
        return voice.name, None  # a voice (or an alias) of the server's own, named
    language = aura["language"]
    return _voice_for_language(context, voice, language, name).name, language


def _named(context: ProtocolContext, name: str) -> bool:
    try:
        context.voice(name)
    except VoiceNotFoundError:
        return False
    return True


def _voice_for_language(
    context: ProtocolContext, default: VoiceInfo, language: str, model: str
) -> VoiceInfo:
    """The default voice if it speaks ``language``, else the first voice that does."""
    for candidate in (default, *context.voices()):
        if locale_matches(language, candidate.language):
            return candidate
    spoken = sorted({v.language for v in context.voices() if v.language})
    raise SessionError(
        "unsupported_language",
        f"model {model} speaks {language}, which no voice here speaks "
        f"(they speak {', '.join(spoken) or 'nothing'})",
    )


def parse_speak_query(
    context: ProtocolContext, query: Mapping[str, str], websocket: bool
) -> SpeakOptions:
    """Validate ``/v1/speak``'s query string; ``SessionError`` when it is refused."""
    model = query.get("model") or DEFAULT_MODEL
    voice, language = resolve_model(context, model)
    fmt = options.output_format(_format_name(query, websocket))
    speed = _number(query, "speed")
    settings = options.voice_settings(speed=1.0 if speed is None else speed)
    return SpeakOptions(model, voice, fmt, settings, language)


def _format_name(query: Mapping[str, str], websocket: bool) -> str:
    """voxflow's name for the format ``encoding``, ``sample_rate``, ``container`` and
    ``bit_rate`` ask for (``options.output_format`` checks it exists)."""
    encoding = (query.get("encoding") or "linear16").lower()
    allowed = WS_ENCODINGS if websocket else HTTP_ENCODINGS
    if encoding not in allowed:
        where = "streaming" if websocket else "REST"
        raise SessionError(
            "unsupported_format",
            f"encoding {shown(encoding)} is not supported for {where} text to speech; "
            f"use one of {', '.join(allowed)}",
        )
    # The WebSocket streams headerless audio: a container does not apply (Deepgram's
    # streaming endpoint has none either).
    container = "none" if websocket else _container(query, encoding)
    if encoding in _LOSSY:
        return _lossy(encoding, _integer(query, "bit_rate"))
    rate = _integer(query, "sample_rate") or _DEFAULT_RATES[encoding]
    if encoding in _COMPANDED:
        return f"{_COMPANDED[encoding]}_{rate}"
    if encoding == "flac":
        return f"flac_{rate}"
    return f"{'wav' if container == 'wav' else 'pcm'}_{rate}"


def _container(query: Mapping[str, str], encoding: str) -> str:
    allowed = _CONTAINERS[encoding]
    container = (query.get("container") or allowed[0]).lower()
    if container not in allowed:
        raise SessionError(
            "unsupported_format",
            f"container {shown(container)} is not available for encoding {encoding}; "
            f"use {' or '.join(allowed)}",
        )
    return container


def _lossy(encoding: str, bit_rate: int | None) -> str:
    """The variant whose bitrate is closest to ``bit_rate`` (bits per second), the higher on a
    tie; the default variant when none is asked for."""
    variants = _LOSSY[encoding]
    if bit_rate is None:
        prefix, kbps = variants[0]
    else:
        prefix, kbps = min(variants, key=lambda v: (abs(v[1] * 1000 - bit_rate), -v[1]))
    return f"{prefix}_{kbps}"


def _integer(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    if _INTEGER.fullmatch(raw) is None:
        raise SessionError(
            "invalid_request", f"{name} must be a positive integer, got {shown(raw)}"
        )
    return int(raw)


def _number(query: Mapping[str, str], name: str) -> float | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    if _DECIMAL.fullmatch(raw) is None:
        raise SessionError("invalid_voice_settings", f"{name} must be a number, got {shown(raw)}")
    return float(raw)
