"""The native protocol's wire format as the client sees it: typed server events and client messages.

Server text frames are parsed into frozen event dataclasses (``parse_event``), each stamped with
its arrival time; client messages are built as plain dicts (``start_message`` ...) and serialised
with ``encode``. Everything here is pure: no socket, no clock, no state.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# -- events ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WordTimestamp:
    """A spoken word: times in the context's audio, characters in all text sent to the context."""

    word: str
    start_ms: float
    end_ms: float
    char_start: int
    char_end: int


@dataclass(frozen=True)
class DoneMetrics:
    """The server's own figures for a finished context (``done.metrics``)."""

    ttfa_ms: float | None
    audio_ms: float
    synth_ms: float
    rtf: float | None
    chunks: int
    deadline_misses: int
    cached: bool | None = None  # its first segment came from the phrase cache


@dataclass(frozen=True)
class AudioEvent:
    context_id: str
    seq: int
    offset_ms: float
    duration_ms: float
    audio: bytes = field(repr=False)  # decoded, in the context's output format
    received_at: float


@dataclass(frozen=True)
class TimestampsEvent:
    context_id: str
    words: tuple[WordTimestamp, ...]
    received_at: float


@dataclass(frozen=True)
class DoneEvent:
    context_id: str
    metrics: DoneMetrics
    received_at: float


@dataclass(frozen=True)
class CancelledEvent:
    context_id: str
    spoken_text: str
    played_ms: float
    latency_ms: float  # server side: cancel received -> cancelled sent
    received_at: float


@dataclass(frozen=True)
class ErrorEvent:
    context_id: str | None  # None: about the connection, not a context
    code: str
    message: str
    retryable: bool
    received_at: float


Event = AudioEvent | TimestampsEvent | DoneEvent | CancelledEvent | ErrorEvent
TerminalEvent = DoneEvent | CancelledEvent


# -- parsing server messages -------------------------------------------------------------------


def _get(message: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = message.get(key)
    # JSON true is a Python int; no field of this protocol is both.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ValueError(f"field {key!r} is missing or has the wrong type: {value!r}")
    return value


def _number(message: Mapping[str, Any], key: str) -> float:
    return float(_get(message, key, (int, float)))


def _optional_number(message: Mapping[str, Any], key: str) -> float | None:
    return None if message.get(key) is None else _number(message, key)


def parse_event(raw: str, received_at: float) -> Event:
    """One server text frame as an event; ``ValueError`` if it is not a valid message."""
    try:
        message = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error}") from error
    if not isinstance(message, dict):
        raise ValueError("not a JSON object")
    kind = message.get("type")
    if kind == "error":
        context = message.get("context_id")
        if context is not None and not isinstance(context, str):
            raise ValueError("context_id must be a string or null")
        return ErrorEvent(
            context_id=context,
            code=_get(message, "code", str),
            message=str(message.get("message", "")),
            retryable=bool(message.get("retryable", False)),
            received_at=received_at,
        )
    context_id: str = _get(message, "context_id", str)
    if kind == "audio":
        try:
            audio = base64.b64decode(_get(message, "audio", str), validate=True)
        except binascii.Error as error:
            raise ValueError(f"audio is not base64: {error}") from error
        return AudioEvent(
            context_id=context_id,
            seq=_get(message, "seq", int),
            offset_ms=_number(message, "offset_ms"),
            duration_ms=_number(message, "duration_ms"),
            audio=audio,
            received_at=received_at,
        )
    if kind == "timestamps":
        words = _get(message, "words", list)
        return TimestampsEvent(
            context_id=context_id,
            words=tuple(_word(w) for w in words),
            received_at=received_at,
        )
    if kind == "done":
        m = _get(message, "metrics", dict)
        return DoneEvent(
            context_id=context_id,
            metrics=DoneMetrics(
                ttfa_ms=_optional_number(m, "ttfa_ms"),
                audio_ms=_number(m, "audio_ms"),
                synth_ms=_number(m, "synth_ms"),
                rtf=_optional_number(m, "rtf"),
                chunks=_get(m, "chunks", int),
                deadline_misses=_get(m, "deadline_misses", int),
                cached=m.get("cached") if isinstance(m.get("cached"), bool) else None,
            ),
            received_at=received_at,
        )
    if kind == "cancelled":
        return CancelledEvent(
            context_id=context_id,
            spoken_text=_get(message, "spoken_text", str),
            played_ms=_number(message, "played_ms"),
            latency_ms=_number(message, "latency_ms"),
            received_at=received_at,
        )
    raise ValueError(f"unknown message type {kind!r}")


def _word(word: object) -> WordTimestamp:
    if not isinstance(word, dict):
        raise ValueError(f"a word timestamp must be an object, got {word!r}")
    return WordTimestamp(
        word=_get(word, "word", str),
        start_ms=_number(word, "start_ms"),
        end_ms=_number(word, "end_ms"),
        char_start=_get(word, "char_start", int),
        char_end=_get(word, "char_end", int),
    )


# -- building client messages ------------------------------------------------------------------


def start_message(
    context_id: str,
    *,
    voice: str | None = None,
    output_format: str = "pcm_24000",
    speed: float | None = None,
    seed: int | None = None,
    chunk_length_schedule: Sequence[int] | None = None,
    auto_mode: bool | None = None,
) -> dict[str, object]:
    """A ``start`` message; options left as ``None`` are left out, so the server's defaults hold."""
    message: dict[str, object] = {
        "type": "start",
        "context_id": context_id,
        "output_format": output_format,
    }
    optional: dict[str, object | None] = {
        "voice": voice,
        "speed": speed,
        "seed": seed,
        "chunk_length_schedule": None
        if chunk_length_schedule is None
        else list(chunk_length_schedule),
        "auto_mode": auto_mode,
    }
    message.update({k: v for k, v in optional.items() if v is not None})
    return message


def text_message(context_id: str, text: str) -> dict[str, object]:
    return {"type": "text", "context_id": context_id, "text": text}


def flush_message(context_id: str) -> dict[str, object]:
    return {"type": "flush", "context_id": context_id}


def end_message(context_id: str) -> dict[str, object]:
    return {"type": "end", "context_id": context_id}


def cancel_message(context_id: str, played_ms: float | None = None) -> dict[str, object]:
    message: dict[str, object] = {"type": "cancel", "context_id": context_id}
    if played_ms is not None:
        message["played_ms"] = round(played_ms, 3)
    return message


def encode(message: Mapping[str, object]) -> str:
    """A client message as one text frame: compact JSON, non-ASCII text kept as it is."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)
