"""One call's connection, per protocol, as the agent frameworks drive it: a *line*.

Every line keeps one connection for the whole call (reconnecting after the server closed it) and
speaks each turn on a context of its own, the way Pipecat and LiveKit do:

* ``native``: ``/v1/stream`` with ``voxflow.client``; ``start``, a token a message, ``end``;
  barge-in is ``cancel`` with the audio played;
* ``elevenlabs``: ``multi-stream-input`` as Pipecat drives it when it streams tokens
  (``auto_mode=false``): ``{"text": " "}`` opens the context, a token a message, then ``flush``
  and ``close_context``; barge-in is ``close_context`` again (it stops at once);
* ``cartesia``: ``/tts/websocket``, a token a request with ``continue: true``, then ``""`` with
  ``continue: false``; barge-in is ``cancel``;
* ``cartesia-sentences`` (not in the default mix): the same socket as Pipecat's
  ``CartesiaTTSService`` drives it by default: its sentence aggregator holds the tokens until a
  sentence's end is confirmed by the next token, each sentence goes as one request with
  ``max_buffer_delay_ms: 0`` (flushed at once), the rest of the reply at its end. Its first audio
  is timed from the first token, its aggregation included, as Pipecat's users hear it;
* ``deepgram``: ``/v1/speak``, a ``Speak`` a token, then ``Flush`` (the turn ends on
  ``Flushed``); barge-in is ``Clear`` (``Cleared``);
* ``wyoming``: a Wyoming server (the ``--peer``): a connection a turn, ``synthesize-start``, a
  ``synthesize-chunk`` a token, ``synthesize-stop``; barge-in closes the connection.

All ask for 24 kHz 16-bit PCM, so a chunk's duration is its length. A line turns what the
server says about a turn into ``LineEvent``s on that turn's queue.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.tts import SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped

from voxflow import (
    AudioEvent,
    CancelledEvent,
    DoneEvent,
    ErrorEvent,
    VoxflowClient,
    VoxflowConnectionError,
    stream_url,
)

__all__ = [
    "LINES",
    "PROTOCOLS",
    "Audio",
    "Failed",
    "Finished",
    "Line",
    "LineEvent",
    "Refused",
    "open_line",
]

log = logging.getLogger(__name__)

PROTOCOLS = ("native", "elevenlabs", "cartesia", "deepgram")  # the default mix
LINES = (*PROTOCOLS, "cartesia-sentences")  # every line the calls may take
_SENTENCE_ENDS = (".", "!", "?")
PCM_BYTES_PER_MS = 48.0  # 24 kHz, 16-bit, mono
ELEVEN_VOICE = "21m00Tcm4TlvDq8ikWAM"  # any ElevenLabs voice id maps to the default voice
CARTESIA_VOICE = "a0e99841-438c-4a64-b679-ae501e7d6091"
REFUSALS = frozenset(
    {"concurrency_limited", "too_many_concurrent_requests", "TOO_MANY_REQUESTS", "Too many"}
)
_PROBE = "calls-probe"  # a native flush of a context never opened: answered in order
_WS_MAX = 64 * 1024 * 1024


@dataclass(frozen=True)
class Audio:
    at: float
    duration_ms: float


@dataclass(frozen=True)
class Finished:
    """The turn's audio is all in (done, isFinal, Flushed, Cleared, cancelled)."""

    at: float


@dataclass(frozen=True)
class Refused:
    at: float


@dataclass(frozen=True)
class Failed:
    at: float
    message: str


LineEvent = Audio | Finished | Refused | Failed


class Line(Protocol):
    """One call's connection (see the module docstring). Each method returns the moment its
    message went out (``time.monotonic()``)."""

    protocol: str

    async def begin(self, turn: str) -> tuple[float, asyncio.Queue[LineEvent]]:
        """Open the turn's context; its events arrive on the queue."""

    async def send(self, turn: str, text: str) -> float: ...

    async def end(self, turn: str) -> float: ...

    async def barge(self, turn: str, played_ms: float, ended: bool = False) -> float:
        """The caller speaks: stop the turn (no ``Finished`` needs to follow). ``ended``: the
        server has finished the turn already (the frameworks still say it: Pipecat closes or
        cancels the context on every interruption, Deepgram's clients send Clear)."""

    async def close(self) -> None: ...


def _refusal(code: object) -> bool:
    return isinstance(code, str) and any(code.startswith(r) for r in REFUSALS)


class _Queues:
    """Per-turn event queues, and what to tell every open turn when the connection goes."""

    def __init__(self) -> None:
        self.by_turn: dict[str, asyncio.Queue[LineEvent]] = {}

    def new(self, turn: str) -> asyncio.Queue[LineEvent]:
        queue: asyncio.Queue[LineEvent] = asyncio.Queue()
        self.by_turn[turn] = queue
        return queue

    def put(self, turn: str | None, event: LineEvent) -> None:
        queue = self.by_turn.get(turn) if turn is not None else None
        if queue is not None:
            queue.put_nowait(event)

    def lost(self, message: str, refused: bool = False) -> None:
        now = time.monotonic()
        for queue in self.by_turn.values():
            queue.put_nowait(Refused(now) if refused else Failed(now, message))
        self.by_turn.clear()


class NativeLine:
    protocol = "native"

    def __init__(self, url: str, voice: str | None) -> None:
        self._url = url
        self._voice = voice
        self._stack = contextlib.AsyncExitStack()
        self._client: VoxflowClient | None = None
        self._readers: set[asyncio.Task[None]] = set()

    async def _connected(self) -> VoxflowClient:
        if self._client is None or self._client.closed:
            await self._stack.aclose()
            self._stack = contextlib.AsyncExitStack()
            self._client = await self._stack.enter_async_context(
                VoxflowClient.connect(stream_url(self._url))
            )
        return self._client

    async def begin(self, turn: str) -> tuple[float, asyncio.Queue[LineEvent]]:
        queue: asyncio.Queue[LineEvent] = asyncio.Queue()
        try:
            client = await self._connected()
            sent = await client.start(turn, voice=self._voice, output_format="pcm_24000")
            # An admitted start has no answer: the probe's answer comes after the refusal, if any.
            await client.flush(_PROBE)
            await anext(aiter(client.events(_PROBE)))
        except VoxflowConnectionError as error:
            queue.put_nowait(Failed(time.monotonic(), str(error)))
            return time.monotonic(), queue
        for event in client.pending(turn):
            if isinstance(event, ErrorEvent):
                refused = event.code in REFUSALS
                queue.put_nowait(
                    Refused(event.received_at) if refused else Failed(event.received_at, event.code)
                )
                return sent, queue
        reader = asyncio.create_task(self._read(client, turn, queue))
        self._readers.add(reader)
        reader.add_done_callback(self._readers.discard)
        return sent, queue

    @staticmethod
    async def _read(client: VoxflowClient, turn: str, queue: asyncio.Queue[LineEvent]) -> None:
        try:
            async for event in client.events(turn):
                if isinstance(event, AudioEvent):
                    queue.put_nowait(Audio(event.received_at, event.duration_ms))
                elif isinstance(event, DoneEvent | CancelledEvent):
                    queue.put_nowait(Finished(event.received_at))
                elif isinstance(event, ErrorEvent):
                    queue.put_nowait(Failed(event.received_at, event.code))
        except VoxflowConnectionError as error:
            queue.put_nowait(Failed(time.monotonic(), str(error)))

    async def send(self, turn: str, text: str) -> float:
        assert self._client is not None
        return await self._client.send_text(turn, text)

    async def end(self, turn: str) -> float:
        assert self._client is not None
        return await self._client.end(turn)

    async def barge(self, turn: str, played_ms: float, ended: bool = False) -> float:
        if ended:
            return time.monotonic()  # a native cancel of an ended context is an error
        assert self._client is not None
        return await self._client.cancel(turn, played_ms)

    async def close(self) -> None:
        for reader in list(self._readers):
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        await self._stack.aclose()


class _JsonLine:
    """A WebSocket of JSON text frames (and, for Deepgram, binary audio), one reader task."""

    protocol = ""

    def __init__(self, url: str) -> None:
        self._url = url
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self.queues = _Queues()

    async def _connected(self) -> ClientConnection:
        if self._ws is None or self._reader is None or self._reader.done():
            await self._drop()
            self._ws = await ws_connect(
                self._url, max_size=_WS_MAX, compression=None, ping_interval=None
            )
            self._reader = asyncio.create_task(self._read(self._ws))
        return self._ws

    async def _read(self, ws: ClientConnection) -> None:
        refused = False
        reason = "connection closed"
        try:
            async for raw in ws:
                at = time.monotonic()
                if isinstance(raw, bytes):
                    self.on_binary(raw, at)
                    continue
                message = json.loads(raw)
                if isinstance(message, dict):
                    refused = self.on_message(message, at) or refused
        except ConnectionClosed as error:
            reason = f"connection lost: {error}"
        finally:
            self.queues.lost(reason, refused)

    def on_message(self, message: dict[str, Any], at: float) -> bool:
        """Route one JSON message; True when it refused a turn for a full server."""
        raise NotImplementedError

    def on_binary(self, data: bytes, at: float) -> None:
        raise ValueError("unexpected binary frame")

    async def _send(self, message: dict[str, Any]) -> float:
        ws = self._ws
        at = time.monotonic()
        if ws is not None:
            with contextlib.suppress(ConnectionClosed):
                await ws.send(json.dumps(message))
        return at

    async def _drop(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        self._ws = self._reader = None

    async def _begin(self, turn: str, first: dict[str, Any] | None) -> tuple[float, Any]:
        queue = self.queues.new(turn)
        started = time.monotonic()
        try:
            await self._connected()
        except InvalidStatus as error:
            self.queues.by_turn.pop(turn, None)
            at = time.monotonic()
            full = error.response.status_code == 429  # refused at the handshake (Deepgram)
            queue.put_nowait(Refused(at) if full else Failed(at, f"cannot connect: {error}"))
            return started, queue
        except (OSError, TimeoutError, InvalidHandshake) as error:
            self.queues.by_turn.pop(turn, None)
            queue.put_nowait(Failed(time.monotonic(), f"cannot connect: {error}"))
            return started, queue
        at = time.monotonic() if first is None else await self._send(first)
        return at, queue

    async def close(self) -> None:
        await self._drop()


class ElevenLabsLine(_JsonLine):
    protocol = "elevenlabs"

    def __init__(self, url: str, voice: str | None) -> None:
        ws = urlsplit(url)._replace(scheme="wss" if url.startswith("https") else "ws").geturl()
        query = "output_format=pcm_24000&auto_mode=false"
        super().__init__(
            f"{ws}/v1/text-to-speech/{voice or ELEVEN_VOICE}/multi-stream-input?{query}"
        )

    async def begin(self, turn: str) -> tuple[float, asyncio.Queue[LineEvent]]:
        sent, queue = await self._begin(turn, {"text": " ", "context_id": turn})
        return sent, queue

    def on_message(self, message: dict[str, Any], at: float) -> bool:
        turn = message.get("contextId")
        if "error" in message:
            if _refusal(message.get("error")):
                return True  # the socket closes next: every open turn is refused
            self.queues.put(turn, Failed(at, str(message.get("error"))))
            return False
        audio = message.get("audio")
        if isinstance(audio, str) and audio:
            self.queues.put(turn, Audio(at, len(base64.b64decode(audio)) / PCM_BYTES_PER_MS))
        if message.get("isFinal") is True:
            self.queues.put(turn, Finished(at))
        return False

    async def send(self, turn: str, text: str) -> float:
        return await self._send({"text": text, "context_id": turn})

    async def end(self, turn: str) -> float:
        at = await self._send({"context_id": turn, "flush": True})
        await self._send({"context_id": turn, "close_context": True})
        return at

    async def barge(self, turn: str, played_ms: float, ended: bool = False) -> float:
        self.queues.by_turn.pop(turn, None)
        return await self._send({"context_id": turn, "close_context": True})


class CartesiaLine(_JsonLine):
    protocol = "cartesia"

    def __init__(self, url: str, voice: str | None) -> None:
        ws = urlsplit(url)._replace(scheme="wss" if url.startswith("https") else "ws").geturl()
        super().__init__(f"{ws}/tts/websocket?cartesia_version=2025-04-16")
        self._voice = voice or CARTESIA_VOICE

    def _request(self, turn: str, text: str, more: bool) -> dict[str, Any]:
        return {
            "model_id": "sonic-2",
            "context_id": turn,
            "transcript": text,
            "continue": more,
            "voice": {"mode": "id", "id": self._voice},
            "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
        }

    async def begin(self, turn: str) -> tuple[float, asyncio.Queue[LineEvent]]:
        # The context opens with the turn's first token (``send``): Cartesia has no open message.
        return await self._begin(turn, None)

    def on_message(self, message: dict[str, Any], at: float) -> bool:
        turn = message.get("context_id")
        kind = message.get("type")
        if kind == "error":
            code = message.get("error_code")
            self.queues.put(turn, Refused(at) if _refusal(code) else Failed(at, str(code)))
        elif kind == "chunk" and isinstance(message.get("data"), str):
            self.queues.put(
                turn, Audio(at, len(base64.b64decode(message["data"])) / PCM_BYTES_PER_MS)
            )
        elif kind == "done":
            self.queues.put(turn, Finished(at))
        return False

    async def send(self, turn: str, text: str) -> float:
        return await self._send(self._request(turn, text, True))

    async def end(self, turn: str) -> float:
        return await self._send(self._request(turn, "", False))

    async def barge(self, turn: str, played_ms: float, ended: bool = False) -> float:
        self.queues.by_turn.pop(turn, None)
        return await self._send({"context_id": turn, "cancel": True})


class CartesiaSentenceLine(CartesiaLine):
    protocol = "cartesia-sentences"

    def __init__(self, url: str, voice: str | None) -> None:
        super().__init__(url, voice)
        self._held: dict[str, str] = {}  # each turn's text not sent yet

    def _request(self, turn: str, text: str, more: bool) -> dict[str, Any]:
        return {**super()._request(turn, text, more), "max_buffer_delay_ms": 0}

    async def send(self, turn: str, text: str) -> float:
        held = self._held.get(turn, "")
        if held.rstrip().endswith(_SENTENCE_ENDS) and text[:1].isspace():
            # The token after a sentence mark confirms the sentence: it goes now.
            self._held[turn] = text
            return await self._send(self._request(turn, held, True))
        self._held[turn] = held + text
        return time.monotonic()

    async def end(self, turn: str) -> float:
        rest = self._held.pop(turn, "")
        if rest.strip():
            await self._send(self._request(turn, rest, True))
        return await super().end(turn)

    async def barge(self, turn: str, played_ms: float, ended: bool = False) -> float:
        self._held.pop(turn, None)
        return await super().barge(turn, played_ms, ended)


class DeepgramLine(_JsonLine):
    protocol = "deepgram"

    def __init__(self, url: str, voice: str | None) -> None:
        ws = urlsplit(url)._replace(scheme="wss" if url.startswith("https") else "ws").geturl()
        model = voice or "aura-2-thalia-en"
        super().__init__(f"{ws}/v1/speak?encoding=linear16&sample_rate=24000&model={model}")
        self._turn: str | None = None  # one turn at a time on a connection

    async def begin(self, turn: str) -> tuple[float, asyncio.Queue[LineEvent]]:
        self._turn = turn
        return await self._begin(turn, None)

    def on_binary(self, data: bytes, at: float) -> None:
        self.queues.put(self._turn, Audio(at, len(data) / PCM_BYTES_PER_MS))

    def on_message(self, message: dict[str, Any], at: float) -> bool:
        kind = message.get("type")
        if kind in ("Flushed", "Cleared"):
            self.queues.put(self._turn, Finished(at))
        elif kind == "Error":
            if _refusal(message.get("code")):
                return True
            self.queues.put(self._turn, Failed(at, str(message.get("code"))))
        return False

    async def send(self, turn: str, text: str) -> float:
        return await self._send({"type": "Speak", "text": text})

    async def end(self, turn: str) -> float:
        return await self._send({"type": "Flush"})

    async def barge(self, turn: str, played_ms: float, ended: bool = False) -> float:
        self.queues.by_turn.pop(turn, None)
        self._turn = None
        return await self._send({"type": "Clear"})


class WyomingLine:
    """A Wyoming TTS server (``tcp://host:port``): one connection a turn."""

    protocol = "wyoming"

    def __init__(self, uri: str) -> None:
        parts = urlsplit(uri)
        if parts.scheme != "tcp" or not parts.hostname or parts.port is None:
            raise ValueError(f"a Wyoming server is tcp://HOST:PORT, got {uri!r}")
        self._host, self._port = parts.hostname, parts.port
        self._client: AsyncTcpClient | None = None
        self._reader: asyncio.Task[None] | None = None

    async def begin(self, turn: str) -> tuple[float, asyncio.Queue[LineEvent]]:
        await self._drop()
        queue: asyncio.Queue[LineEvent] = asyncio.Queue()
        client = AsyncTcpClient(self._host, self._port)
        try:
            await client.connect()
        except OSError as error:
            queue.put_nowait(Failed(time.monotonic(), f"cannot connect: {error}"))
            return time.monotonic(), queue
        self._client = client
        at = time.monotonic()
        await client.write_event(SynthesizeStart().event())
        self._reader = asyncio.create_task(self._read(client, queue))
        return at, queue

    @staticmethod
    async def _read(client: AsyncTcpClient, queue: asyncio.Queue[LineEvent]) -> None:
        while True:
            event = await client.read_event()
            at = time.monotonic()
            if event is None:
                queue.put_nowait(Failed(at, "connection closed"))
                return
            if AudioChunk.is_type(event.type):
                chunk = AudioChunk.from_event(event)
                ms = 1000.0 * len(chunk.audio) / (chunk.rate * chunk.width * chunk.channels)
                queue.put_nowait(Audio(at, ms))
            elif SynthesizeStopped.is_type(event.type):
                # The end of the streamed request (audio-stop follows every sentence).
                queue.put_nowait(Finished(at))
                return

    async def send(self, turn: str, text: str) -> float:
        assert self._client is not None
        at = time.monotonic()
        await self._client.write_event(SynthesizeChunk(text=text).event())
        return at

    async def end(self, turn: str) -> float:
        assert self._client is not None
        at = time.monotonic()
        await self._client.write_event(SynthesizeStop().event())
        return at

    async def barge(self, turn: str, played_ms: float, ended: bool = False) -> float:
        at = time.monotonic()
        await self._drop()
        return at

    async def _drop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.disconnect()
            self._client = None

    async def close(self) -> None:
        await self._drop()


_LINES: dict[str, Callable[[str, str | None], Line]] = {
    "native": NativeLine,
    "elevenlabs": ElevenLabsLine,
    "cartesia": CartesiaLine,
    "deepgram": DeepgramLine,
    "cartesia-sentences": CartesiaSentenceLine,
}


def open_line(protocol: str, url: str, voice: str | None) -> Line:
    """A line of ``protocol`` to the server at ``url`` (``wyoming``: ``url`` is tcp://...)."""
    if protocol == "wyoming":
        return WyomingLine(url)
    try:
        return _LINES[protocol](url, voice)
    except KeyError:
        raise ValueError(f"no calls line for {protocol!r}; one of {', '.join(_LINES)}") from None
