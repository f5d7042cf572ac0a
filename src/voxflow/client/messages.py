"""The native protocol's wire format as the client sees it: typed server events and client messages.

Server text frames are parsed into frozen event dataclasses (``parse_event``), each stamped with
its arrival time; client messages are built as plain dicts (``start_message`` ...) and serialised
with ``encode``. Everything here is pure: no socket, no clock, no state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from voxflow.transports.native import schema

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


def parse_event(raw: str, received_at: float) -> Event:
    """One server text frame as an event; ``ValueError`` if it is not a valid message (the
    fields: ``voxflow.transports.native.schema``, which the server writes them by)."""
    try:
        message = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error}") from error
    if not isinstance(message, dict):
        raise ValueError("not a JSON object")
    kind = message.get("type")
    spec = schema.MESSAGES.get(kind) if isinstance(kind, str) else None
    if spec is None:
        raise ValueError(f"unknown message type {kind!r}")
    fields = spec.decode(message)
    if spec is schema.ERROR:
        del fields["retry_after_ms"]
        return ErrorEvent(**fields, received_at=received_at)
    if spec is schema.AUDIO:
        del fields["text_end"]
        return AudioEvent(**fields, audio=schema.decode_audio(message), received_at=received_at)
    if spec is schema.TIMESTAMPS:
        words = tuple(WordTimestamp(**word) for word in fields["words"])
        return TimestampsEvent(fields["context_id"], words, received_at)
    if spec is schema.DONE:
        return DoneEvent(fields["context_id"], DoneMetrics(**fields["metrics"]), received_at)
    return CancelledEvent(**fields, received_at=received_at)


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
    text_format: str | None = None,
    volume: float | None = None,
    sentence_pause_ms: float | None = None,
    language: str | None = None,
) -> dict[str, object]:
    """A ``start`` message; options left as ``None`` are left out, so the server's defaults hold.
    ``language`` (``ja``, ``en-GB``): the server refuses the context unless the voice speaks it."""
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
        "text_format": text_format,
        "volume": volume,
        "sentence_pause_ms": sentence_pause_ms,
        "language": language,
    }
    message.update({k: v for k, v in optional.items() if v is not None})
    return message


def settings_message(
    context_id: str,
    *,
    speed: float | None = None,
    volume: float | None = None,
    sentence_pause_ms: float | None = None,
) -> dict[str, object]:
    """A ``settings`` message: the context's delivery for the text that follows."""
    message: dict[str, object] = {"type": "settings", "context_id": context_id}
    optional = {"speed": speed, "volume": volume, "sentence_pause_ms": sentence_pause_ms}
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
