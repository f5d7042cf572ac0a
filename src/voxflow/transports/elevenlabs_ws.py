"""ElevenLabs-compatible WebSocket text-to-speech, for clients written against ElevenLabs.

``WS /v1/text-to-speech/{voice_id}/stream-input`` carries one context and
``WS /v1/text-to-speech/{voice_id}/multi-stream-input`` up to five (ElevenLabs' limit), each a
session context on the connection's ``SessionDriver``. This module only translates: text
buffering, segmenting, scheduling and cancellation are the session core's.

Client messages (JSON text frames):

* the first message of a context opens it: ``{"text": " ", "voice_settings": {...},
  "generation_config": {"chunk_length_schedule": [...]}}`` (plus ``"context_id"`` on
  multi-stream); only ``voice_settings.speed`` changes the voice; API keys in any spelling are
  accepted and ignored;
* ``{"text": "Hello ", "flush": false, "try_trigger_generation": true}`` appends text (the
  segmenter already cuts as early as the schedule allows, so ``try_trigger_generation`` changes
  nothing); ``"flush": true`` then synthesizes everything buffered;
* stream-input: ``{"text": ""}`` ends the input: the rest is spoken, ``{"isFinal": true}`` follows
  the last audio and the socket closes;
* multi-stream: ``{"text": "", "context_id": "x"}`` only keeps the connection alive;
  ``{"context_id": "x", "close_context": true}`` closes a context the way ElevenLabs documents it:
  a context whose text was all flushed finishes speaking it and then gets ``isFinal`` (what
  Pipecat sends at the end of every turn), while a context holding text sent since its last flush
  (a barge-in in the middle of a reply) or one already closing stops at once, with no audio of it
  after that point, and gets ``isFinal``; ``{"close_socket": true}`` closes every context that
  way and the socket once the last ``isFinal`` is out.

Server messages: ``{"audio": "<base64>", "isFinal": null, "normalizedAlignment": {...},
"alignment": {...}}`` where the alignment lists the characters first heard in that chunk with
times in ms from the chunk's start (``null`` for a chunk that starts none), then ``{"isFinal":
true}``; multi-stream adds ``"contextId"``. Errors are ElevenLabs-shaped, ``{"message": ...,
"error": ..., "code": 1008}``, and close the socket with that code as ElevenLabs does;
only a failed synthesis of one segment is reported without closing. A connection with no client
message and no audio for ``inactivity_timeout`` seconds (20 by default, at most 180) closes with
``input_timeout_exceeded``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from voxflow.server.services import Services
from voxflow.session.alignment import CharAligner, ChunkAlignment
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
from voxflow.text.normalize import NormalizationMode
from voxflow.transports import elevenlabs_http
from voxflow.transports.driver import SessionDriver
from voxflow.transports.elevenlabs_http import ElevenLabsError, SpeechBody, ws_alignment

log = logging.getLogger(__name__)

ELEVENLABS_MAX_CONTEXTS = 5
DEFAULT_INACTIVITY_S = 20
MAX_INACTIVITY_S = 180
SCHEDULE_RANGE = (50, 500)  # ElevenLabs' bounds for each chunk_length_schedule entry
NORMAL_CLOSURE = 1000
POLICY_VIOLATION = 1008
INTERNAL_ERROR = 1011
TRY_AGAIN_LATER = 1013
STREAM_CONTEXT = "stream"  # the one context of stream-input (never shown to the client)
DEFAULT_CONTEXT = "default"  # multi-stream messages without a context_id
_MAX_REASON_BYTES = 123  # the WebSocket limit on a close reason


@dataclass(frozen=True)
class ConnectionOptions:
    """What the query string sets for every context of the connection."""

    voice: str
    output_format: str
    auto_mode: bool | None
    seed: int | None
    inactivity_timeout_s: float
    normalization: NormalizationMode


def _flag(query: Mapping[str, str], name: str) -> bool | None:
    raw = query.get(name)
    if raw is None:
        return None
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0"):
        return False
    raise ElevenLabsError("invalid_request", f"{name} must be true or false, got {raw!r}")


def _integer(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ElevenLabsError(
            "invalid_request", f"{name} must be an integer, got {raw!r}"
        ) from None


def parse_connection(
    services: Services, voice_id: str, query: Mapping[str, str]
) -> ConnectionOptions:
    """Validate the query string. ``model_id``, ``language_code``, ``sync_alignment``,
    ``enable_logging``, ``enable_ssml_parsing`` and ``authorization`` are accepted and
    ignored."""
    fmt = elevenlabs_http.check_output_format(query.get("output_format"))
    voice = elevenlabs_http.resolve_voice_id(services, voice_id)
    timeout = _integer(query, "inactivity_timeout")
    if timeout is None:
        timeout = DEFAULT_INACTIVITY_S
    if not 1 <= timeout <= MAX_INACTIVITY_S:
        raise ElevenLabsError(
            "invalid_request", f"inactivity_timeout must be between 1 and {MAX_INACTIVITY_S}"
        )
    seed = _integer(query, "seed")
    if seed is not None and not 0 <= seed <= 4_294_967_295:
        raise ElevenLabsError("invalid_request", "seed must be between 0 and 4294967295")
    return ConnectionOptions(
        voice,
        fmt.name,
        _flag(query, "auto_mode"),
        seed,
        float(timeout),
        elevenlabs_http.normalization_mode(query.get("apply_text_normalization")),
    )


@dataclass
class _Context:
    """One context as the transport sees it."""

    aligner: CharAligner = field(default_factory=CharAligner)
    text: str = ""  # everything sent to it, which word timings index
    unflushed: bool = False  # speakable text arrived since the last flush
    closing: bool = False  # close_context or end of input: finishing its audio


@dataclass(frozen=True)
class Reply:
    """Frames to send for one session event, and the close to do after them, if any."""

    frames: list[str]
    close: tuple[int, str] | None = None


class ElevenLabsSocket:
    """Protocol state of one connection, without I/O: ``receive`` applies a client message to the
    session; ``reply`` turns a session event into frames."""

    def __init__(
        self,
        driver: SessionDriver,
        services: Services,
        voice_id: str,
        query: Mapping[str, str],
        multi: bool,
    ) -> None:
        self._driver = driver
        self._session = driver.session
        self._multi = multi
        self._max_contexts = driver_contexts(services, multi)
        self._max_chars = services.session_config().chunking.max_chars
        # Contexts the session has open, by id (the reader's view).
        self._open: dict[str, _Context] = {}
        # Contexts whose terminal event the writer has not handled yet, oldest first per id: a
        # cancelled id may be reopened before its ``isFinal`` is sent.
        self._in_flight: dict[str, deque[_Context]] = {}
        self._ending = False  # end of input or close_socket: nothing more is read
        self._closing_socket = False
        self._failed = False
        self.last_activity = driver.now()
        self.options: ConnectionOptions | None = None
        try:
            self.options = parse_connection(services, voice_id, query)
        except ElevenLabsError as error:
            self._fail(error)
            driver.dispatch()

    @property
    def inactivity_timeout_s(self) -> float:
        return DEFAULT_INACTIVITY_S if self.options is None else self.options.inactivity_timeout_s

    # -- client messages -------------------------------------------------------------------------

    def receive(self, raw: str) -> None:
        self.last_activity = self._driver.now()
        if self._failed:
            return
        try:
            try:
                message = json.loads(raw)
            except json.JSONDecodeError as error:
                raise ElevenLabsError(
                    "invalid_json", f"message is not valid JSON: {error}"
                ) from None
            if not isinstance(message, dict):
                raise ElevenLabsError("invalid_message", "message must be a JSON object")
            self._apply(message)
        except ElevenLabsError as error:
            self._fail(error)
        self._driver.dispatch()

    def receive_binary(self) -> None:
        self.last_activity = self._driver.now()
        if not self._failed:
            self._fail(ElevenLabsError("invalid_message", "binary frames are not accepted"))
            self._driver.dispatch()

    def timed_out(self) -> None:
        """No message and no audio for the inactivity timeout."""
        if self._failed:
            return
        seconds = round(self.inactivity_timeout_s)
        self._fail(
            ElevenLabsError(
                "input_timeout_exceeded",
                f"Have not received a new text input within the timeout of {seconds} seconds. "
                "Streaming input terminated. Please make sure to either feed the input in a "
                'timely manner, or to send the end of input text (empty string "") when done.',
            )
        )
        self._driver.dispatch()

    def _fail(self, error: ElevenLabsError) -> None:
        # In order behind the events already queued; the writer closes the socket on it.
        self._failed = True
        self._session.error(None, error.status, error.message)

    def _apply(self, message: dict[str, Any]) -> None:
        now = self._driver.now()
        if self._multi and message.get("close_socket") is True:
            self._close_socket(now)
            return
        if self._ending:
            return
        cid = self._context_id(message)
        text = message.get("text")
        if text is not None and not isinstance(text, str):
            raise ElevenLabsError("invalid_message", "text must be a string")
        if self._multi and message.get("close_context") is True:
            self._close_context(cid, now)
            return
        flush = message.get("flush") is True
        if not self._multi and text == "":
            self._end_of_input(now)
            return
        if not text and not flush:
            return  # a keep-alive: receiving it already reset the inactivity timer
        context = self._open.get(cid)
        if context is None:
            if not text:
                # A flush for a context never opened: opening one here would leave a context
                # the client does not know it has to close.
                return
            context = self._start(cid, message, now)
        elif context.closing:
            raise ElevenLabsError(
                "context_closing",
                f"context {cid!r} is closing; wait for its isFinal before reusing the id",
            )
        if text:
            self._session.text(cid, text, now)
            context.text += text
            context.unflushed = context.unflushed or not text.isspace()
        if flush:
            self._session.flush(cid, now)
            context.unflushed = False

    def _context_id(self, message: dict[str, Any]) -> str:
        if not self._multi:
            return STREAM_CONTEXT
        cid = message.get("context_id")
        if cid is None:
            return DEFAULT_CONTEXT
        if not isinstance(cid, str) or not cid:
            raise ElevenLabsError("invalid_message", "context_id must be a non-empty string")
        return cid

    def _start(self, cid: str, message: dict[str, Any], now: float) -> _Context:
        assert self.options is not None  # a connection without options has failed
        if self._session.open_contexts >= self._max_contexts:
            raise ElevenLabsError(
                "max_active_conversations",
                "Maximum simultaneous contexts per WebSocket connection exceeded "
                f"({self._max_contexts}). Please close an existing context before opening a "
                "new one.",
            )
        options = StartOptions(
            voice=self.options.voice,
            output_format=self.options.output_format,
            settings=elevenlabs_http.voice_settings(
                message.get("voice_settings"), self.options.seed
            ),
            chunk_length_schedule=self._schedule(message.get("generation_config")),
            auto_mode=self.options.auto_mode,
            normalization=self.options.normalization,
        )
        self._session.start(cid, options, now)
        context = _Context()
        self._open[cid] = context
        self._in_flight.setdefault(cid, deque()).append(context)
        return context

    def _schedule(self, config: object) -> tuple[int, ...] | None:
        if config is None:
            return None
        if not isinstance(config, dict):
            raise ElevenLabsError("invalid_message", "generation_config must be an object")
        raw = config.get("chunk_length_schedule")
        if raw is None:
            return None
        low, high = SCHEDULE_RANGE
        if (
            not isinstance(raw, list)
            or not raw
            or any(isinstance(v, bool) or not isinstance(v, int | float) for v in raw)
            or any(not low <= v <= high for v in raw)
        ):
            raise ElevenLabsError(
                "invalid_chunk_length_schedule",
                f"chunk_length_schedule must be a list of numbers between {low} and {high}",
            )
        # A segment never exceeds max_chars, so a larger minimum means "as long as allowed".
        return tuple(min(round(v), self._max_chars) for v in raw)

    def _close_context(self, cid: str, now: float) -> None:
        context = self._open.get(cid)
        if context is None:
            return  # never opened or already finished: nothing to close
        if context.closing or context.unflushed:
            self._session.cancel(cid, None, now, now)
            del self._open[cid]
        else:
            context.closing = True
            self._session.end(cid, now)

    def _end_of_input(self, now: float) -> None:
        self._ending = True
        context = self._open.get(STREAM_CONTEXT)
        if context is None:
            self._session.request_close("end of input")
        else:
            context.closing = True
            self._session.end(STREAM_CONTEXT, now)

    def _close_socket(self, now: float) -> None:
        if self._closing_socket:
            return
        self._ending = self._closing_socket = True
        for cid, context in list(self._open.items()):
            if not context.closing:
                self._close_context(cid, now)
        self._session.request_close("close_socket")

    # -- session events --------------------------------------------------------------------------

    def reply(self, event: ClientEvent) -> Reply:
        if isinstance(event, TimestampsOut):
            context = self._current(event.context_id)
            if context is not None:
                context.aligner.add(event, context.text)
            return Reply([])
        if isinstance(event, AudioOut):
            self.last_activity = self._driver.now()
            context = self._current(event.context_id)
            alignment = (
                ChunkAlignment(event.offset_ms, ())
                if context is None
                else context.aligner.take(event)
            )
            return Reply([self._audio(event.context_id, event.data, alignment)])
        if isinstance(event, DoneOut | CancelledOut):
            return self._final(event)
        if isinstance(event, CloseOut):
            return self._close()
        return self._error(event)

    def _current(self, cid: str) -> _Context | None:
        queue = self._in_flight.get(cid)
        return queue[0] if queue else None

    def _final(self, event: DoneOut | CancelledOut) -> Reply:
        cid = event.context_id
        frames = []
        queue = self._in_flight.get(cid)
        context = queue.popleft() if queue else None
        if queue is not None and not queue:
            del self._in_flight[cid]
        if context is not None:
            if isinstance(event, DoneOut):
                rest = context.aligner.finish(context.text)
                if rest.chars:
                    # Characters after the last word (trailing spaces): sent without audio so
                    # the client's text is complete before isFinal.
                    frames.append(self._audio(cid, b"", rest))
            if self._open.get(cid) is context:
                del self._open[cid]
        body: dict[str, Any] = {"isFinal": True}
        if self._multi:
            body["contextId"] = cid
        frames.append(_dump(body))
        done = not self._multi or (self._closing_socket and not self._in_flight)
        return Reply(frames, (NORMAL_CLOSURE, "") if done else None)

    def _close(self) -> Reply:
        if self._in_flight:
            return Reply([])  # the last isFinal closes the socket
        # stream-input ended before any text: its (empty) generation is final all the same.
        frames = [] if self._multi else [_dump({"isFinal": True})]
        return Reply(frames, (NORMAL_CLOSURE, ""))

    def _error(self, event: ErrorOut) -> Reply:
        if event.code == "synthesis_failed":
            # One segment is missing from the audio; the context goes on.
            return Reply([_error_frame(event.code, event.message, INTERNAL_ERROR)])
        self._failed = True
        return Reply(
            [_error_frame(event.code, event.message, POLICY_VIOLATION)],
            (POLICY_VIOLATION, event.message),
        )

    def _audio(self, cid: str, data: bytes, alignment: ChunkAlignment) -> str:
        chars = ws_alignment(alignment)
        body: dict[str, Any] = {
            "audio": base64.b64encode(data).decode("ascii"),
            "isFinal": None,
            # voxflow speaks the text as sent: the normalized alignment is the same.
            "normalizedAlignment": chars,
            "alignment": chars,
        }
        if self._multi:
            body["contextId"] = cid
        return _dump(body)


def driver_contexts(services: Services, multi: bool) -> int:
    """How many contexts a connection may have open: ElevenLabs' limit, or the server's if lower."""
    if not multi:
        return 1
    return min(ELEVENLABS_MAX_CONTEXTS, services.settings.max_contexts_per_connection)


def _dump(body: dict[str, Any]) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def _error_frame(error: str, message: str, code: int) -> str:
    return _dump({"message": message, "error": error, "code": code})


def _reason(text: str) -> str:
    encoded = text.encode()[:_MAX_REASON_BYTES]
    return encoded.decode(errors="ignore")


# -- I/O ------------------------------------------------------------------------------------------


async def serve_elevenlabs(
    websocket: WebSocket, services: Services, voice_id: str, multi: bool
) -> None:
    await websocket.accept()
    config = replace(services.session_config(), max_contexts=driver_contexts(services, multi))
    driver = services.new_driver(config)
    socket = ElevenLabsSocket(driver, services, voice_id, websocket.query_params, multi)
    writer = asyncio.create_task(
        _write(websocket, driver, socket, services.settings.write_timeout_s),
        name="voxflow-el-write",
    )
    tasks = {
        asyncio.create_task(_read(websocket, socket), name="voxflow-el-read"),
        writer,
        asyncio.create_task(driver.stalled.wait(), name="voxflow-el-stall"),
    }
    watchdog = asyncio.create_task(_watch(driver, socket), name="voxflow-el-watchdog")
    close: tuple[int, str] | None = None
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if writer.done() and not writer.cancelled():
            if isinstance(writer.exception(), TimeoutError):
                driver.stalled.set()
            elif writer.exception() is None:
                close = writer.result()
    finally:
        for task in (*tasks, watchdog):
            task.cancel()
        for task in (*tasks, watchdog):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await driver.close()
    if driver.stalled.is_set():
        log.warning("closing an ElevenLabs client that stopped reading")
        close = (POLICY_VIOLATION, "client stopped reading")
    if close is not None and websocket.client_state is WebSocketState.CONNECTED:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1.0):
                await websocket.close(close[0], _reason(close[1]))


async def _read(websocket: WebSocket, socket: ElevenLabsSocket) -> None:
    while True:
        try:
            message = await websocket.receive()
        except WebSocketDisconnect:
            return
        if message["type"] == "websocket.disconnect":
            return
        if message.get("text") is not None:
            socket.receive(message["text"])
        else:
            socket.receive_binary()


async def _write(
    websocket: WebSocket, driver: SessionDriver, socket: ElevenLabsSocket, timeout_s: float
) -> tuple[int, str]:
    """Send events until one calls for closing the socket; returns that close."""
    while True:
        reply = socket.reply(await driver.outbound.get())
        for frame in reply.frames:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel that
            # lands as the send completes, and the writer then never ends.
            async with asyncio.timeout(timeout_s):
                await websocket.send_text(frame)
        if reply.close is not None:
            return reply.close


async def _watch(driver: SessionDriver, socket: ElevenLabsSocket) -> None:
    """Close a connection that has been idle for the inactivity timeout, as ElevenLabs does."""
    while True:
        idle = driver.now() - socket.last_activity
        remaining = socket.inactivity_timeout_s - idle
        if remaining <= 0:
            socket.timed_out()
            return
        await asyncio.sleep(remaining)


# -- routes ---------------------------------------------------------------------------------------


def mount_elevenlabs(app: FastAPI) -> None:
    """Add the ElevenLabs-compatible endpoints to ``app`` (its lifespan sets
    ``app.state.services``). ``GET /v1/voices`` stays the app's own; see
    ``elevenlabs_http.elevenlabs_voice_fields``."""

    def services_of(request: Request) -> Services | None:
        return getattr(request.app.state, "services", None)

    def starting() -> Response:
        return ElevenLabsError(
            "service_unavailable", "the server is still starting", 503
        ).response()

    async def speech(
        request: Request,
        voice_id: str,
        body: SpeechBody,
        output_format: str | None,
        stream: bool,
        timestamps: bool,
    ) -> Response:
        services = services_of(request)
        if services is None:
            return starting()
        return await elevenlabs_http.text_to_speech(
            services, voice_id, body, output_format, stream, timestamps
        )

    @app.post("/v1/text-to-speech/{voice_id}")
    async def convert(
        voice_id: str, body: SpeechBody, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, body, output_format, False, False)

    @app.post("/v1/text-to-speech/{voice_id}/stream")
    async def stream(
        voice_id: str, body: SpeechBody, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, body, output_format, True, False)

    @app.post("/v1/text-to-speech/{voice_id}/with-timestamps")
    async def convert_with_timestamps(
        voice_id: str, body: SpeechBody, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, body, output_format, False, True)

    @app.post("/v1/text-to-speech/{voice_id}/stream/with-timestamps")
    async def stream_with_timestamps(
        voice_id: str, body: SpeechBody, request: Request, output_format: str | None = None
    ) -> Response:
        return await speech(request, voice_id, body, output_format, True, True)

    @app.get("/v2/voices")
    async def voices_v2(
        request: Request,
        search: str | None = None,
        page_size: int = 10,
        next_page_token: str | None = None,
    ) -> Response:
        services = services_of(request)
        if services is None:
            return starting()
        return elevenlabs_http.voices_v2(services, search, page_size, next_page_token)

    @app.get("/v1/voices/{voice_id}")
    async def voice(voice_id: str, request: Request) -> Response:
        services = services_of(request)
        if services is None:
            return starting()
        return elevenlabs_http.voice(services, voice_id)

    async def serve(websocket: WebSocket, voice_id: str, multi: bool) -> None:
        services: Services | None = getattr(websocket.app.state, "services", None)
        if services is None:
            await websocket.close(TRY_AGAIN_LATER, "the server is still starting")
            return
        await serve_elevenlabs(websocket, services, voice_id, multi)

    @app.websocket("/v1/text-to-speech/{voice_id}/stream-input")
    async def stream_input(websocket: WebSocket, voice_id: str) -> None:
        await serve(websocket, voice_id, False)

    @app.websocket("/v1/text-to-speech/{voice_id}/multi-stream-input")
    async def multi_stream_input(websocket: WebSocket, voice_id: str) -> None:
        await serve(websocket, voice_id, True)
