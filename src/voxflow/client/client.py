"""Async client for the native WebSocket protocol (``WS /v1/stream``).

One ``VoxflowClient`` is one connection. Sending is a plain coroutine per message type; receiving is
done by a background reader task that parses every server message into a typed event, stamps it with
its arrival time (``time.monotonic()``) and routes it to its context's queue. ``events(context_id)``
iterates one context's events and ends after its ``done`` or ``cancelled``; errors that belong to no
context go to ``errors()``.

A context id can be reused once its ``done``/``cancelled`` has arrived, so each context id holds a
series of *streams*, one per use: the reader always appends to the current one and starts a new one
after a terminal event. A finished stream stays around until its terminal event has been taken, so
``events()`` may be called before, during or after the context runs and still sees all of it.

When the connection goes away (or the client is closed) every iterator still waiting raises
``VoxflowConnectionError`` once the events that did arrive are taken; ``errors()`` just ends.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import itertools
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from voxflow.client.playout import PlayoutBuffer, PlayoutStats

log = logging.getLogger(__name__)

STREAM_PATH = "/v1/stream"
# Server messages carry base64 audio of whole windows; a few seconds at 48 kHz pass the websockets
# default of 1 MiB, and a client that drops the connection over that would look like a server bug.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# How long aclose() waits for the reader to see the close handshake end before cancelling it.
_READER_CLOSE_WAIT_S = 2.0


class VoxflowConnectionError(ConnectionError):
    """The connection could not be opened, was lost, or the client was closed."""


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


def stream_url(url: str) -> str:
    """The ``/v1/stream`` WebSocket URL for a server URL.

    ``http://host:port`` (or ``ws://host:port``) becomes ``ws://host:port/v1/stream``, ``https``
    becomes ``wss``; a URL that already has a path is kept as it is.
    """
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    if scheme not in ("ws", "wss"):
        raise ValueError(f"expected an http(s) or ws(s) URL, got {url!r}")
    path = parts.path if parts.path not in ("", "/") else STREAM_PATH
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


# -- per-context queues ------------------------------------------------------------------------


class _Exhausted(Exception):
    """A stream's terminal event has been taken: nothing more will ever come out of it."""


class _Stream:
    """The events of one use of a context id (or the connection-level errors), in order."""

    def __init__(self) -> None:
        self._items: deque[Event] = deque()
        self._ready = asyncio.Event()
        self._closed: str | None = None
        self._terminal_pushed = False

    def push(self, event: Event) -> None:
        self._items.append(event)
        if isinstance(event, DoneEvent | CancelledEvent):
            self._terminal_pushed = True
        self._ready.set()

    def close(self, reason: str) -> None:
        if self._closed is None:
            self._closed = reason
            self._ready.set()

    def take_all(self) -> list[Event]:
        items = list(self._items)
        self._items.clear()
        return items

    async def get(self) -> Event:
        while not self._items:
            # Whoever took the terminal event (an iterator or pending()), the stream is over for
            # every reader: waiting on would hang, since a finished stream is never closed.
            if self._terminal_pushed:
                raise _Exhausted
            if self._closed is not None:
                raise VoxflowConnectionError(self._closed)
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()


class _ContextEvents:
    """``events()``: a plain async iterator, not an async generator, so that leaving an
    ``async for`` early leaves no generator to be finalised by a task on the loop."""

    def __init__(self, client: VoxflowClient, context_id: str, stream: _Stream) -> None:
        self._client = client
        self._context_id = context_id
        self._stream = stream
        self._ended = False

    def __aiter__(self) -> _ContextEvents:
        return self

    async def __anext__(self) -> Event:
        if self._ended:
            raise StopAsyncIteration
        try:
            event = await self._stream.get()
        except _Exhausted:
            self._ended = True
            raise StopAsyncIteration from None
        if isinstance(event, DoneEvent | CancelledEvent):
            self._ended = True
            self._client._taken_terminal(self._context_id, self._stream)
        return event


class _ConnectionErrors:
    def __init__(self, stream: _Stream) -> None:
        self._stream = stream

    def __aiter__(self) -> _ConnectionErrors:
        return self

    async def __anext__(self) -> ErrorEvent:
        try:
            event = await self._stream.get()
        except VoxflowConnectionError:
            raise StopAsyncIteration from None
        assert isinstance(event, ErrorEvent)  # only errors are routed here
        return event


# -- the client --------------------------------------------------------------------------------


class VoxflowClient:
    """One connection to ``/v1/stream``. Open it with ``async with VoxflowClient.connect(url)``."""

    def __init__(self, websocket: ClientConnection, url: str) -> None:
        self._ws = websocket
        self._url = url
        self._live: dict[str, _Stream] = {}
        self._finished: dict[str, deque[_Stream]] = {}
        self._connection_errors = _Stream()
        self._close_reason: str | None = None
        self._closing = False
        self._reader = asyncio.create_task(self._read_loop(), name="voxflow-client-reader")

    @classmethod
    @asynccontextmanager
    async def connect(
        cls, url: str, *, open_timeout: float = 10.0, ping_interval: float | None = None
    ) -> AsyncIterator[VoxflowClient]:
        """Open a connection; closed (reader task included) when the ``async with`` exits.

        Keepalive pings are off by default: the server notices a dead client by its own write
        timeout, and a ping task would only add work next to latency measurements.
        """
        try:
            websocket = await ws_connect(
                url,
                open_timeout=open_timeout,
                ping_interval=ping_interval,
                max_size=MAX_MESSAGE_BYTES,
                # Base64 PCM barely compresses; deflate would only cost CPU on both ends.
                compression=None,
            )
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as error:
            raise VoxflowConnectionError(f"cannot connect to {url}: {error}") from error
        client = cls(websocket, url)
        try:
            yield client
        finally:
            await client.aclose()

    # -- state -----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._url

    @property
    def closed(self) -> bool:
        return self._close_reason is not None

    @property
    def close_reason(self) -> str | None:
        return self._close_reason

    # -- sending ---------------------------------------------------------------------------------
    # Every send returns time.monotonic() taken just before the frame went to the socket: the
    # reference point for client-side latencies.

    async def start(
        self,
        context_id: str,
        *,
        voice: str | None = None,
        output_format: str = "pcm_24000",
        speed: float | None = None,
        seed: int | None = None,
        chunk_length_schedule: Sequence[int] | None = None,
        auto_mode: bool | None = None,
    ) -> float:
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
        return await self.send_message(message)

    async def send_text(self, context_id: str, text: str) -> float:
        return await self.send_message({"type": "text", "context_id": context_id, "text": text})

    async def flush(self, context_id: str) -> float:
        return await self.send_message({"type": "flush", "context_id": context_id})

    async def end(self, context_id: str) -> float:
        return await self.send_message({"type": "end", "context_id": context_id})

    async def cancel(self, context_id: str, played_ms: float | None = None) -> float:
        message: dict[str, object] = {"type": "cancel", "context_id": context_id}
        if played_ms is not None:
            message["played_ms"] = round(played_ms, 3)
        return await self.send_message(message)

    async def send_message(self, message: Mapping[str, object]) -> float:
        """Send any protocol message as it is (for fields or types this client does not know)."""
        if self._close_reason is not None:
            raise VoxflowConnectionError(self._close_reason)
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        sent_at = time.monotonic()
        try:
            await self._ws.send(data)
        except ConnectionClosed as error:
            raise VoxflowConnectionError(f"connection lost: {error}") from error
        return sent_at

    # -- receiving -------------------------------------------------------------------------------

    def events(self, context_id: str) -> AsyncIterator[Event]:
        """The events of ``context_id``'s oldest unfinished use, ending after done/cancelled.

        Iterate each use once, from one task. Raises ``VoxflowConnectionError`` if the connection
        ends before the terminal event arrived.
        """
        finished = self._finished.get(context_id)
        if finished:
            return _ContextEvents(self, context_id, finished[0])
        return _ContextEvents(self, context_id, self._live_stream(context_id))

    def pending(self, context_id: str) -> tuple[Event, ...]:
        """Take the events of ``context_id`` that have arrived and nobody has taken, at once."""
        taken: list[Event] = []
        for stream in list(self._finished.get(context_id, ())):
            taken.extend(stream.take_all())
            self._taken_terminal(context_id, stream)
        live = self._live.get(context_id)
        if live is not None:
            taken.extend(live.take_all())
        return tuple(taken)

    def errors(self) -> AsyncIterator[ErrorEvent]:
        """Errors about the connection rather than a context; ends when the connection does."""
        return _ConnectionErrors(self._connection_errors)

    def _live_stream(self, context_id: str) -> _Stream:
        stream = self._live.get(context_id)
        if stream is None:
            stream = self._live[context_id] = _Stream()
            if self._close_reason is not None:
                stream.close(self._close_reason)
        return stream

    def _taken_terminal(self, context_id: str, stream: _Stream) -> None:
        finished = self._finished.get(context_id)
        if finished is not None and stream in finished:
            finished.remove(stream)
            if not finished:
                del self._finished[context_id]

    def _route(self, event: Event) -> None:
        if event.context_id is None:
            self._connection_errors.push(event)
            return
        stream = self._live_stream(event.context_id)
        stream.push(event)
        if isinstance(event, DoneEvent | CancelledEvent):
            # The id is free again on the server: its next events belong to a new stream.
            del self._live[event.context_id]
            self._finished.setdefault(event.context_id, deque()).append(stream)

    async def _read_loop(self) -> None:
        reason = "connection closed"
        try:
            async for raw in self._ws:
                received_at = time.monotonic()
                if not isinstance(raw, str):
                    log.warning("ignoring a binary frame from the server (%d bytes)", len(raw))
                    continue
                try:
                    event = parse_event(raw, received_at)
                except ValueError as error:
                    log.warning("ignoring a malformed server message: %s", error)
                    continue
                self._route(event)
            reason = f"connection closed by the server (code {self._ws.close_code})"
        except ConnectionClosed as error:
            reason = f"connection lost: {error}"
        except Exception as error:
            log.exception("voxflow client reader failed")
            reason = f"client reader failed: {error!r}"
        finally:
            self._shutdown("client closed" if self._closing else reason)

    def _shutdown(self, reason: str) -> None:
        if self._close_reason is not None:
            return
        self._close_reason = reason
        for stream in self._live.values():
            stream.close(reason)
        self._connection_errors.close(reason)

    async def aclose(self) -> None:
        """Close the connection and stop the reader (idempotent)."""
        self._closing = True
        try:
            with contextlib.suppress(Exception):
                await self._ws.close()
        finally:
            if not self._reader.done():
                # The reader normally ends as soon as the close handshake does.
                await asyncio.wait({self._reader}, timeout=_READER_CLOSE_WAIT_S)
            if not self._reader.done():
                self._reader.cancel()
            try:
                await self._reader
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
            self._shutdown("client closed")


# -- recording one context -----------------------------------------------------------------------


@dataclass(frozen=True)
class ContextResult:
    """Everything one context produced, as seen by the client."""

    context_id: str
    text_sent_at: float | None  # when its first text was sent (time.monotonic())
    audio: bytes = field(repr=False)
    arrivals: tuple[float, ...]  # arrival time of each audio chunk
    durations_ms: tuple[float, ...]  # playback time of each audio chunk
    timestamps: tuple[TimestampsEvent, ...]
    done: DoneEvent | None
    cancelled: CancelledEvent | None
    errors: tuple[ErrorEvent, ...]
    playout: PlayoutStats

    @property
    def first_audio_at(self) -> float | None:
        return self.arrivals[0] if self.arrivals else None

    @property
    def ttfa_ms(self) -> float | None:
        """Client-side time to first audio: arrival of the first chunk that holds audio (not
        just a container header) - first text send."""
        if self.text_sent_at is None:
            return None
        for arrival, duration in zip(self.arrivals, self.durations_ms, strict=True):
            if duration > 0:
                return 1000.0 * (arrival - self.text_sent_at)
        return None

    @property
    def chunk_gaps_ms(self) -> tuple[float, ...]:
        """Time between consecutive audio arrivals."""
        return tuple(1000.0 * (b - a) for a, b in itertools.pairwise(self.arrivals))

    @property
    def audio_ms(self) -> float:
        return sum(self.durations_ms)

    @property
    def metrics(self) -> DoneMetrics | None:
        return None if self.done is None else self.done.metrics

    @property
    def words(self) -> tuple[WordTimestamp, ...]:
        return tuple(w for batch in self.timestamps for w in batch.words)


class ContextRecorder:
    """Collects one context's events and runs a ``PlayoutBuffer`` on its audio as it arrives."""

    def __init__(self, context_id: str, playout_buffer_ms: float = 150.0) -> None:
        self._context_id = context_id
        self._playout = PlayoutBuffer(playout_buffer_ms)
        self._text_sent_at: float | None = None
        self._audio: list[bytes] = []
        self._arrivals: list[float] = []
        self._durations: list[float] = []
        self._timestamps: list[TimestampsEvent] = []
        self._done: DoneEvent | None = None
        self._cancelled: CancelledEvent | None = None
        self._errors: list[ErrorEvent] = []

    @property
    def context_id(self) -> str:
        return self._context_id

    @property
    def playout(self) -> PlayoutBuffer:
        return self._playout

    @property
    def audio_ms(self) -> float:
        return self._playout.received_ms

    @property
    def finished(self) -> bool:
        return self._done is not None or self._cancelled is not None

    def text_sent(self, at: float) -> None:
        """Note a text send; only the first one counts (it starts the TTFA clock)."""
        if self._text_sent_at is None:
            self._text_sent_at = at

    def observe(self, event: Event) -> None:
        if event.context_id != self._context_id:
            raise ValueError(f"event of {event.context_id!r} fed to {self._context_id!r}")
        if isinstance(event, AudioEvent):
            self._audio.append(event.audio)
            self._arrivals.append(event.received_at)
            self._durations.append(event.duration_ms)
            self._playout.add(event.received_at, event.duration_ms)
        elif isinstance(event, TimestampsEvent):
            self._timestamps.append(event)
        elif isinstance(event, DoneEvent):
            self._done = event
            # A short context may never fill the start buffer: its player starts when it ends.
            self._playout.mark_end(event.received_at)
        elif isinstance(event, CancelledEvent):
            self._cancelled = event
        else:
            self._errors.append(event)

    async def collect(self, client: VoxflowClient, *, stop_on_error: bool = False) -> ContextResult:
        """Observe the context's events until done/cancelled (or its first error)."""
        async for event in client.events(self._context_id):
            self.observe(event)
            if stop_on_error and isinstance(event, ErrorEvent):
                break
        return self.result()

    def result(self) -> ContextResult:
        return ContextResult(
            context_id=self._context_id,
            text_sent_at=self._text_sent_at,
            audio=b"".join(self._audio),
            arrivals=tuple(self._arrivals),
            durations_ms=tuple(self._durations),
            timestamps=tuple(self._timestamps),
            done=self._done,
            cancelled=self._cancelled,
            errors=tuple(self._errors),
            playout=self._playout.stats(),
        )


async def speak(
    client: VoxflowClient,
    context_id: str,
    text: str,
    *,
    voice: str | None = None,
    output_format: str = "pcm_24000",
    speed: float | None = None,
    seed: int | None = None,
    playout_buffer_ms: float = 150.0,
) -> ContextResult:
    """Open ``context_id``, send all of ``text`` and ``end``, and record it until ``done``.

    Stops at the first error, so a rejected ``start`` does not wait for a ``done`` that will
    never come. (The protocol opens a context on text to an unknown id, so after a rejected
    ``start`` the server still speaks the text with its defaults; those events stay queued under
    ``context_id`` until taken with ``events()`` or ``pending()``.)
    """
    recorder = ContextRecorder(context_id, playout_buffer_ms)
    await client.start(context_id, voice=voice, output_format=output_format, speed=speed, seed=seed)
    recorder.text_sent(await client.send_text(context_id, text))
    await client.end(context_id)
    return await recorder.collect(client, stop_on_error=True)
