"""The fields of a Cartesia generation request, read into voxflow's options (no I/O).

The WebSocket's generation requests and ``POST /tts/bytes`` share them: ``voice``,
``output_format``, the speed (``generation_config.speed``, the older ``speed`` and
``voice.__experimental_controls.speed``), ``pronunciation_dict_id`` (one of the server's
pronunciation dictionaries), ``language`` (or ``locale``: a language the voice must speak) and,
over HTTP, ``normalization``. Types and Cartesia's own ranges are checked here; voice lookup and
voxflow's ranges are ``voxflow.session.options``'. Fields voxflow has no use for (``model_id``,
``generation_config.volume`` and ``emotion``) are not read at all.

Voices: Cartesia voice ids are UUIDs; a client written for Cartesia carries ids of voices that do
not exist here, so an id of that shape selects the default voice (as ElevenLabs' 20-character ids
do on the ElevenLabs routes), and so does a voice given as an embedding. A voxflow voice name
selects that voice; anything else is ``unknown_voice``.

Formats: ``raw`` PCM at Cartesia's six rates, ``pcm_s16le`` as voxflow renders it and
``pcm_f32le`` converted from it on the way out (``AudioFormat.float32``); ``pcm_mulaw`` and
``pcm_alaw`` at 8 kHz (G.711 has no other rate). HTTP adds ``wav`` (always 16-bit PCM, whatever
the encoding: the header says what it holds) and ``mp3`` (voxflow's variant nearest to the
rate and ``bit_rate`` asked for).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from voxflow.audio.formats import SUPPORTED_FORMATS, Codec, OutputFormat, parse_output_format
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.engines.base import VoiceSettings
from voxflow.session import options
from voxflow.session.dictionaries import Dictionaries, Locator
from voxflow.session.errors import SessionError
from voxflow.text.lexicon import Lexicon
from voxflow.text.normalize.normalizer import NormalizationMode

__all__ = [
    "HTTP_CONTAINERS",
    "WS_CONTAINERS",
    "AudioFormat",
    "audio_format",
    "language",
    "normalization",
    "resolve_voice",
    "speed_settings",
]

CARTESIA_RATES = (8000, 16000, 22050, 24000, 44100, 48000)
WS_CONTAINERS = frozenset({"raw"})  # the WebSocket (and SSE) carry raw audio only
HTTP_CONTAINERS = frozenset({"raw", "wav", "mp3"})
_ENCODINGS = ("pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw")
_COMPANDED = MappingProxyType({"pcm_mulaw": "ulaw_8000", "pcm_alaw": "alaw_8000"})
_CARTESIA_VOICE_ID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
# Cartesia's named speeds: the older ``speed`` ("slow", "normal", "fast") and the experimental
# controls of API version 2024-11-13 (which add the two extremes).
_NAMED_SPEEDS: Mapping[str, float] = MappingProxyType(
    {"slowest": 0.7, "slow": 0.85, "normal": 1.0, "fast": 1.2, "fastest": 1.4}
)
_MP3: tuple[OutputFormat, ...] = tuple(
    fmt for fmt in map(parse_output_format, SUPPORTED_FORMATS) if fmt.codec is Codec.MP3
)


@dataclass(frozen=True)
class AudioFormat:
    """A Cartesia ``output_format`` as voxflow renders it."""

    name: str  # voxflow's format, which the session encodes
    float32: bool  # pcm_f32le: the session's s16le samples are converted on the way out
    media_type: str


def _field(raw: Mapping[str, Any], name: str, what: str) -> str:
    value = raw.get(name)
    if not isinstance(value, str):
        raise SessionError("invalid_message", f"{what}.{name} must be a string")
    return value


def audio_format(raw: object, containers: frozenset[str]) -> AudioFormat:
    """The format ``output_format`` asks for; ``unsupported_format`` for one voxflow lacks."""
    if not isinstance(raw, dict):
        raise SessionError("invalid_message", "output_format must be an object")
    container = raw.get("container", "raw")
    if not isinstance(container, str) or container.lower() not in containers:
        allowed = ", ".join(sorted(containers))
        raise SessionError(
            "unsupported_format",
            f"output_format.container {options.shown(container)} is not supported here "
            f"(supported: {allowed})",
        )
    container = container.lower()
    rate = raw.get("sample_rate")
    if isinstance(rate, bool) or not isinstance(rate, int) or rate not in CARTESIA_RATES:
        raise SessionError(
            "unsupported_format",
            f"output_format.sample_rate must be one of {', '.join(map(str, CARTESIA_RATES))}, "
            f"got {options.shown(rate)}",
        )
    if container == "mp3":
        return _mp3(raw.get("bit_rate"), rate)
    encoding = _field(raw, "encoding", "output_format")
    if encoding not in _ENCODINGS:
        raise SessionError(
            "unsupported_format",
            f"output_format.encoding must be one of {', '.join(_ENCODINGS)}, "
            f"got {options.shown(encoding)}",
        )
    if container == "wav":
        # A WAV header says what the file holds, so any encoding can be read from 16-bit PCM.
        return _voxflow(f"wav_{rate}", float32=False)
    if encoding in _COMPANDED:
        if rate != 8000:
            raise SessionError(
                "unsupported_format", f"{encoding} is available at 8000 Hz only, not {rate}"
            )
        return _voxflow(_COMPANDED[encoding], float32=False)
    return _voxflow(f"pcm_{rate}", float32=encoding == "pcm_f32le")


def _voxflow(name: str, float32: bool) -> AudioFormat:
    fmt = options.output_format(name)
    return AudioFormat(fmt.name, float32, fmt.media_type)


def _mp3(bit_rate: object, rate: int) -> AudioFormat:
    if bit_rate is None:
        bit_rate = 128_000
    if isinstance(bit_rate, bool) or not isinstance(bit_rate, int) or bit_rate <= 0:
        raise SessionError(
            "unsupported_format",
            f"output_format.bit_rate must be a positive integer, got {options.shown(bit_rate)}",
        )
    # voxflow encodes a handful of MP3 variants; an MP3 stream says its own rate, so the
    # nearest one plays wherever the asked-for one would.
    nearest = min(
        _MP3,
        key=lambda f: (abs(f.sample_rate - rate), abs((f.bitrate_kbps or 0) * 1000 - bit_rate)),
    )
    return AudioFormat(nearest.name, False, nearest.media_type)


def resolve_voice(context: ProtocolContext, raw: object) -> str:
    """The voxflow voice for a Cartesia ``voice`` (an id, or ``{"mode": "id", "id": ...}``)."""
    if raw is None:
        return context.default_voice
    if isinstance(raw, dict):
        mode = raw.get("mode", "id")
        if mode == "embedding":
            return context.default_voice  # no voice cloning here: the default voice speaks
        if mode != "id":
            raise SessionError(
                "invalid_message", f"voice.mode must be id or embedding, got {options.shown(mode)}"
            )
        raw = raw.get("id")
        if raw is None:
            return context.default_voice
    if not isinstance(raw, str):
        raise SessionError("invalid_message", "voice must be a voice id or a voice object")
    return options.resolve_voice(
        context.voice,
        raw,
        context.default_voice,
        alias=lambda name: _CARTESIA_VOICE_ID.fullmatch(name) is not None,
        hint="Cartesia voice ids (UUIDs) map to the default voice",
    ).name


def language(context: ProtocolContext, voice: str, message: Mapping[str, Any]) -> str | None:
    """A request's ``language`` (``ja``) or ``locale`` (``en-GB``; Cartesia's newer field, the
    same values), which ``voice`` must speak: ``unsupported_language`` otherwise,
    ``invalid_language`` for a value that is no language code. Cartesia takes one or the other,
    never both. Absent: the voice's own language."""
    values = {}
    for name in ("language", "locale"):
        value = message.get(name)
        if value is not None and not isinstance(value, str):
            raise SessionError("invalid_message", f"{name} must be a string")
        if value is not None:
            values[name] = value
    if len(values) > 1:
        raise SessionError("invalid_message", "a request may set language or locale, never both")
    if not values:
        return None
    (requested,) = values.values()
    options.check_language(context.voice(voice), requested)
    return requested


def speed_settings(message: Mapping[str, Any]) -> VoiceSettings:
    """The voice settings a request's speed fields give; the first present of
    ``generation_config.speed`` (a multiplier), ``speed`` (a name) and the experimental
    ``voice.__experimental_controls.speed`` (a name, or -1 to 1 around normal) applies."""
    speed = _generation_speed(message.get("generation_config"))
    if speed is None:
        speed = _named_speed(message.get("speed"), "speed")
    if speed is None:
        speed = _experimental_speed(message.get("voice"))
    return options.voice_settings(speed=1.0 if speed is None else speed)


def _generation_speed(config: object) -> float | None:
    if config is None:
        return None
    if not isinstance(config, dict):
        raise SessionError("invalid_message", "generation_config must be an object")
    return options.finite_number(
        config.get("speed"), "generation_config.speed", "invalid_voice_settings"
    )


def _named_speed(raw: object, what: str) -> float | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or raw not in _NAMED_SPEEDS:
        raise SessionError(
            "invalid_voice_settings",
            f"{what} must be one of {', '.join(_NAMED_SPEEDS)}, got {options.shown(raw)}",
        )
    return _NAMED_SPEEDS[raw]


def _experimental_speed(voice: object) -> float | None:
    controls = voice.get("__experimental_controls") if isinstance(voice, dict) else None
    if not isinstance(controls, dict):
        return None
    raw = controls.get("speed")
    what = "voice.__experimental_controls.speed"
    if isinstance(raw, str):
        return _named_speed(raw, what)
    value = options.finite_number(raw, what, "invalid_voice_settings")
    if value is None:
        return None
    if not -1.0 <= value <= 1.0:
        raise SessionError("invalid_voice_settings", f"{what} must be between -1 and 1")
    return 1.0 + 0.5 * value  # -1: half speed, 0: normal, 1: one and a half


def normalization(raw: object) -> NormalizationMode:
    """``/tts/bytes``' ``normalization``: ``off`` speaks the text as written; ``auto`` (the
    default) or a locale code normalizes it (the voice decides the language)."""
    if raw is None:
        return NormalizationMode.AUTO
    if not isinstance(raw, str):
        raise SessionError("invalid_message", "normalization must be a string")
    return NormalizationMode.OFF if raw.lower() == "off" else NormalizationMode.AUTO


def dictionary_lexicon(raw: object, dictionaries: Dictionaries) -> Lexicon | None:
    """``pronunciation_dict_id``: one of the server's pronunciation dictionaries, at its latest
    version, as the request's lexicon (None: no such field)."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise SessionError("invalid_message", "pronunciation_dict_id must be a string")
    return dictionaries((Locator(raw),))
