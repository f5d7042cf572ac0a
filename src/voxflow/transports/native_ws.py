"""Native WebSocket protocol, ``WS /v1/stream`` (see docs/protocol.md).

JSON messages in, session calls out; session events in, JSON (or, with ``?audio=binary``, a JSON
header followed by one binary frame of audio) out. Bad messages get an ``error`` event and the
connection stays usable. A client that stops reading is closed once its outbound queue fills or one
send takes longer than the write timeout, and its work stops like a cancel.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from voxflow.engines.base import VoiceSettings
from voxflow.server.services import Services
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    ClientEvent,
    CloseOut,
    DoneOut,
    ErrorOut,
    TimestampsOut,
)
from voxflow.session.session import StartOptions
from voxflow.text.lexicon import Lexicon, LexiconEntry
from voxflow.text.normalize import NormalizationMode
from voxflow.transports.driver import SessionDriver

log = logging.getLogger(__name__)

MESSAGE_TYPES = ("start", "text", "flush", "end", "cancel")
MAX_LEXICON_ENTRIES = 1000
WRITE_STALL_CLOSE_CODE = 1008  # policy violation: the client stopped reading


class MessageError(ValueError):
    def __init__(self, code: str, message: str, context_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.context_id = context_id


def _field(message: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = message.get(name)
    if value is None:
        return None
    # bool is an int in Python; a JSON true is not a number here.
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise MessageError("invalid_message", f"{name!r} must not be a boolean")
    if not isinstance(value, kind):
        raise MessageError("invalid_message", f"{name!r} has the wrong type")
    return value


def parse_lexicon(raw: object) -> Lexicon | None:
    """Per-request pronunciations: ``[{"word": ..., "respelling": ...} | {"word": ...,
    "phonemes": ...}]``, which override the server's lexicon for this context."""
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) > MAX_LEXICON_ENTRIES:
        raise MessageError(
            "invalid_message", f"lexicon must be a list of at most {MAX_LEXICON_ENTRIES} entries"
        )
    entries = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("word"), str):
            raise MessageError("invalid_message", "each lexicon entry needs a string 'word'")
        respelling, phonemes = item.get("respelling"), item.get("phonemes")
        if not isinstance(respelling, str | None) or not isinstance(phonemes, str | None):
            raise MessageError("invalid_message", "respelling and phonemes must be strings")
        try:
            entries.append(LexiconEntry(item["word"], respelling=respelling, phonemes=phonemes))
        except ValueError as error:
            raise MessageError("invalid_message", f"lexicon entry: {error}") from error
    return Lexicon(entries)


def parse_start(message: dict[str, Any]) -> StartOptions:
    """The options of a ``start`` message, validated."""
    schedule = message.get("chunk_length_schedule")
    if schedule is not None and (
        not isinstance(schedule, list)
        or not schedule
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in schedule)
    ):
        raise MessageError("invalid_message", "chunk_length_schedule must be a list of integers")
    try:
        settings = VoiceSettings(
            speed=float(_field(message, "speed", (int, float)) or 1.0),
            noise_scale=_field(message, "noise_scale", (int, float)),
            noise_w=_field(message, "noise_w", (int, float)),
            seed=_field(message, "seed", int),
            speaker_id=_field(message, "speaker_id", int),
        )
    except ValueError as error:
        if isinstance(error, MessageError):
            raise
        raise MessageError("invalid_message", str(error)) from error
    raw_mode = _field(message, "apply_text_normalization", str)
    try:
        normalization = NormalizationMode((raw_mode or "auto").lower())
    except ValueError:
        raise MessageError(
            "invalid_message", "apply_text_normalization must be auto, on or off"
        ) from None
    return StartOptions(
        voice=_field(message, "voice", str),
        normalization=normalization,
        lexicon=parse_lexicon(message.get("lexicon")),
        output_format=_field(message, "output_format", str),
        settings=settings,
        chunk_length_schedule=None if schedule is None else tuple(schedule),
        auto_mode=_field(message, "auto_mode", bool),
    )


def handle_message(driver: SessionDriver, raw: str, received_at: float) -> None:
    """Apply one client message to the session (errors become ``error`` events)."""
    now = driver.now()
    context_id: str | None = None
    try:
        try:
            message = json.loads(raw)
        except json.JSONDecodeError as error:
            raise MessageError("invalid_json", f"message is not valid JSON: {error}") from error
        if not isinstance(message, dict):
            raise MessageError("invalid_message", "message must be a JSON object")
        raw_context = message.get("context_id")
        if raw_context is not None and (not isinstance(raw_context, str) or not raw_context):
            raise MessageError("invalid_message", "context_id must be a non-empty string")
        context_id = raw_context
        kind = message.get("type")
        session = driver.session
        if kind == "start":
            session.start(context_id, parse_start(message), now)
        elif kind == "text":
            text = message.get("text")
            if not isinstance(text, str):
                raise MessageError("invalid_message", "text message needs a string 'text'")
            session.text(context_id, text, now)
        elif kind == "flush":
            session.flush(context_id, now)
        elif kind == "end":
            session.end(context_id, now)
        elif kind == "cancel":
            played = _field(message, "played_ms", (int, float))
            played_ms = None if played is None else float(played)
            session.cancel(context_id, played_ms, now, received_at)
        else:
            raise MessageError(
                "unknown_type", f"unknown message type {kind!r}; expected one of {MESSAGE_TYPES}"
            )
    except MessageError as error:
        driver.session.error(error.context_id or context_id, error.code, str(error))
    driver.dispatch()


def encode_event(event: ClientEvent, binary: bool) -> tuple[str, bytes | None]:
    """The JSON text frame for ``event`` and, in binary mode, the audio frame that follows it."""
    body: dict[str, Any]
    extra: bytes | None = None
    if isinstance(event, AudioOut):
        body = {
            "type": "audio",
            "context_id": event.context_id,
            "seq": event.seq,
            "offset_ms": round(event.offset_ms, 3),
            "duration_ms": round(event.duration_ms, 3),
        }
        if binary:
            body["bytes"] = len(event.data)
            extra = event.data
        else:
            body["audio"] = base64.b64encode(event.data).decode("ascii")
    elif isinstance(event, TimestampsOut):
        body = {
            "type": "timestamps",
            "context_id": event.context_id,
            "words": [
                {
                    "word": w.word,
                    "start_ms": round(w.start_ms, 1),
                    "end_ms": round(w.end_ms, 1),
                    "char_start": w.char_start,
                    "char_end": w.char_end,
                }
                for w in event.words
            ],
        }
    elif isinstance(event, DoneOut):
        m = event.metrics
        body = {
            "type": "done",
            "context_id": event.context_id,
            "metrics": {
                "ttfa_ms": None if m.ttfa_ms is None else round(m.ttfa_ms, 2),
                "audio_ms": round(m.audio_ms, 2),
                "synth_ms": round(m.synth_ms, 2),
                "rtf": None if m.rtf is None else round(m.rtf, 4),
                "chunks": m.chunks,
                "deadline_misses": m.deadline_misses,
            },
        }
    elif isinstance(event, CancelledOut):
        body = {
            "type": "cancelled",
            "context_id": event.context_id,
            "spoken_text": event.spoken_text,
            "played_ms": round(event.played_ms, 2),
            "latency_ms": round(event.latency_ms, 3),
        }
    else:
        if not isinstance(event, ErrorOut):
            raise TypeError(f"no wire form for {event!r}")
        body = {
            "type": "error",
            "context_id": event.context_id,
            "code": event.code,
            "message": event.message,
            "retryable": event.retryable,
        }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False), extra


async def serve_native(websocket: WebSocket, services: Services) -> None:
    binary = websocket.query_params.get("audio") == "binary"
    await websocket.accept()
    driver = services.new_driver()
    tasks = {
        asyncio.create_task(_read(websocket, driver), name="voxflow-ws-read"),
        asyncio.create_task(
            _write(websocket, driver, binary, services.settings.write_timeout_s),
            name="voxflow-ws-write",
        ),
        asyncio.create_task(driver.stalled.wait(), name="voxflow-ws-stall"),
    }
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        stalled = driver.stalled.is_set() or any(
            t.get_name() == "voxflow-ws-write" and isinstance(t.exception(), TimeoutError)
            for t in done
            if not t.cancelled()
        )
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await driver.close()
    if stalled and websocket.client_state is WebSocketState.CONNECTED:
        log.warning("closing a client that stopped reading")
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1.0):
                await websocket.close(WRITE_STALL_CLOSE_CODE, "client stopped reading")


async def _read(websocket: WebSocket, driver: SessionDriver) -> None:
    while True:
        try:
            message = await websocket.receive()
        except WebSocketDisconnect:
            return
        if message["type"] == "websocket.disconnect":
            return
        if message.get("text") is not None:
            handle_message(driver, message["text"], driver.now())
        else:
            driver.error(None, "invalid_message", "binary frames are not accepted from clients")


async def _write(
    websocket: WebSocket, driver: SessionDriver, binary: bool, timeout_s: float
) -> None:
    while True:
        event = await driver.outbound.get()
        if isinstance(event, CloseOut):
            return
        event = driver.sent(event) or event
        text, extra = encode_event(event, binary)
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel that
        # lands as the send completes, and the writer then never ends.
        async with asyncio.timeout(timeout_s):
            await websocket.send_text(text)
            if extra is not None:
                await websocket.send_bytes(extra)
