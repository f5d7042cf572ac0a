"""The Wyoming protocol over TCP (Home Assistant's voice pipeline), e.g. ``tcp://0.0.0.0:10200``.

One ``SessionDriver`` per connection, one request at a time (Wyoming has no request ids), each
request one session context whose audio goes out as ``audio-chunk`` events as soon as it is
rendered. Audio is s16le mono at the voice's own sample rate, so nothing is resampled.

Event sequences (client -> server: server -> client):

* ``describe``: ``info`` with one ``TtsProgram`` listing every voice, streaming supported.
* ``synthesize``: ``audio-start``, ``audio-chunk``..., ``audio-stop``.
* ``synthesize-start``, ``synthesize-chunk``..., [``synthesize``], ``synthesize-stop``:
  ``audio-start``, ``audio-chunk``..., ``audio-stop``, ``synthesize-stopped``. Audio starts while
  text is still arriving. Home Assistant sends the whole text again as a ``synthesize`` between the
  last chunk and ``synthesize-stop`` (for servers without streaming); inside an open stream that
  event is ignored, as wyoming-piper does.
* A bad request (unknown voice or speaker, malformed event): ``error`` instead of any audio, and
  the connection stays usable. A stream whose ``synthesize-start`` failed still answers its
  ``synthesize-stop`` with ``synthesize-stopped``, because Home Assistant waits for that event.
* ``ping``: ``pong``. Other events are dropped, as Wyoming peers do with events they do not know.

A request that arrives while the previous one is still being answered waits for it. When the
client goes away its work stops; a client that only half-closes after sending a complete request
still gets the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import warnings
from dataclasses import dataclass
from typing import Any

from voxflow.engines.base import VoiceInfo, VoiceSettings
from voxflow.session.events import AudioOut, CloseOut, DoneOut, ErrorOut
from voxflow.session.services import Services
from voxflow.session.session import SessionError, StartOptions
from voxflow.transports.wyoming.framing import BadEvent, read_event
from voxflow.transports.wyoming.info import build_info, resolve_voice

with warnings.catch_warnings():
    # wyoming.audio imports the stdlib ``audioop``, which warns about its removal on 3.11-3.12
    # (wyoming ships its own copy for 3.13+); we never call it, and the warning would otherwise
    # surface wherever warnings are errors.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.error import Error
    from wyoming.event import Event, async_write_event
    from wyoming.info import Describe
    from wyoming.ping import Ping, Pong
    from wyoming.tts import (
        Synthesize,
        SynthesizeChunk,
        SynthesizeStart,
        SynthesizeStop,
        SynthesizeStopped,
        SynthesizeVoice,
    )

__all__ = ["WyomingConnection"]

log = logging.getLogger(__name__)

SAMPLE_WIDTH = 2  # bytes: every pcm_* format is s16le
CHANNELS = 1


@dataclass
class _Request:
    """The request being answered; ``context_id`` None is a stream whose start failed."""

    context_id: str | None
    rate: int
    streaming: bool
    input_done: bool  # all its text is in: what is left is to send the rest of the audio
    audio_started: bool = False


def _text(data: dict[str, Any], event_type: str) -> str:
    text = data.get("text")
    if not isinstance(text, str):
        raise SessionError("invalid_event", f"{event_type} needs a string 'text'")
    return text


def _requested_voice(data: dict[str, Any], event_type: str) -> SynthesizeVoice | None:
    raw = data.get("voice")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SessionError("invalid_event", f"{event_type} 'voice' must be an object")
    voice = SynthesizeVoice.from_dict(raw)
    if voice is not None and not all(
        isinstance(v, str | None) for v in (voice.name, voice.language, voice.speaker)
    ):
        raise SessionError("invalid_event", f"{event_type} voice fields must be strings")
    return voice


def _check_text_format(data: dict[str, Any]) -> None:
    if data.get("text_format") == "ssml":
        # Piper would read the tags aloud.
        raise SessionError("unsupported_text_format", "SSML is not supported; send plain text")


class WyomingConnection:
    """One client: reads its events, answers each request in order (see the package docs)."""

    def __init__(
        self, services: Services, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._services = services
        self._reader = reader
        self._writer = writer
        self._driver = services.new_driver()
        self._write_lock = asyncio.Lock()
        self._request: _Request | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._ids = itertools.count(1)

    async def run(self) -> None:
        read = asyncio.create_task(self._read_loop(), name="voxflow-wyoming-read")
        pump = asyncio.create_task(self._pump(), name="voxflow-wyoming-write")
        stall = asyncio.create_task(self._driver.stalled.wait(), name="voxflow-wyoming-stall")
        tasks = {read, pump, stall}
        abort = False
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if read in done and _succeeded(read) and self._answer_pending():
                # End of input after a complete request: the client may have only half-closed
                # and still be reading. If it is gone instead, the next write fails and ends this.
                answered = asyncio.create_task(self._idle.wait(), name="voxflow-wyoming-answer")
                tasks.add(answered)
                done, _ = await asyncio.wait(
                    {answered, pump, stall}, return_when=asyncio.FIRST_COMPLETED
                )
            abort = stall in done or any(_timed_out(t) for t in done)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    try:
                        await task
                    except OSError:
                        pass  # the client went away, or stopped reading (TimeoutError)
                    except Exception:
                        log.exception("Wyoming connection failed")
            await self._driver.close()
            await self._close_socket(abort)

    async def _close_socket(self, abort: bool) -> None:
        if abort:
            # The client stopped reading: flushing what is buffered for it could take forever.
            self._writer.transport.abort()
        else:
            self._writer.close()
        try:
            async with asyncio.timeout(2.0):
                await self._writer.wait_closed()
        except TimeoutError:
            self._writer.transport.abort()
        except OSError:
            pass  # reset by the peer: closed all the same

    def _answer_pending(self) -> bool:
        request = self._request
        return request is not None and request.context_id is not None and request.input_done

    def _stream_open(self) -> bool:
        request = self._request
        return request is not None and request.streaming and not request.input_done

    # -- client -> server ----------------------------------------------------------------------

    async def _read_loop(self) -> None:
        while True:
            try:
                event = await read_event(self._reader)
            except OSError:  # reset by the peer
                return
            except BadEvent as error:
                await self._send(Error(text=error.message, code=error.code).event())
                if error.fatal:
                    return  # the framing after it cannot be trusted
                continue
            if event is None:  # end of input
                return
            await self._handle(event)

    async def _handle(self, event: Event) -> None:
        kind = event.type
        try:
            if not isinstance(event.data, dict):
                raise SessionError("invalid_event", f"{kind} data must be an object")
            if Describe.is_type(kind):
                await self._send(build_info(self._services).event())
            elif Ping.is_type(kind):
                text = event.data.get("text")
                await self._send(Pong(text=text if isinstance(text, str) else None).event())
            elif Synthesize.is_type(kind):
                await self._on_synthesize(event.data)
            elif SynthesizeStart.is_type(kind):
                await self._on_synthesize_start(event.data)
            elif SynthesizeChunk.is_type(kind):
                self._on_synthesize_chunk(event.data)
            elif SynthesizeStop.is_type(kind):
                await self._on_synthesize_stop()
            else:
                log.debug("ignoring Wyoming event %r", kind)
        except SessionError as error:
            await self._send(Error(text=error.message, code=error.code).event())

    async def _on_synthesize(self, data: dict[str, Any]) -> None:
        if self._stream_open():
            return  # the copy of the streamed text that Home Assistant sends for old servers
        # Answers go out in request order, so a request waits for the one before it.
        await self._idle.wait()
        text = _text(data, "synthesize")
        _check_text_format(data)
        voice, speaker_id = resolve_voice(self._services, _requested_voice(data, "synthesize"))
        context_id = self._begin(voice, speaker_id, streaming=False)
        if context_id is None:
            return
        now = self._driver.now()
        self._feed(context_id, text)
        self._driver.session.end(context_id, now)

    async def _on_synthesize_start(self, data: dict[str, Any]) -> None:
        if self._stream_open():
            raise SessionError(
                "stream_open", "a synthesis stream is already open; send synthesize-stop first"
            )
        await self._idle.wait()
        try:
            _check_text_format(data)
            voice, speaker_id = resolve_voice(
                self._services, _requested_voice(data, "synthesize-start")
            )
        except SessionError:
            # The client goes on with this stream's chunks and waits for synthesize-stopped, so
            # the stream stays open (with nothing to synthesize) until its synthesize-stop.
            self._set_request(_Request(None, 0, streaming=True, input_done=False))
            raise
        self._begin(voice, speaker_id, streaming=True)

    def _on_synthesize_chunk(self, data: dict[str, Any]) -> None:
        request = self._request
        if request is None or not self._stream_open():
            raise SessionError("no_stream", "synthesize-chunk needs synthesize-start first")
        text = _text(data, "synthesize-chunk")
        if request.context_id is not None:
            self._feed(request.context_id, text)

    async def _on_synthesize_stop(self) -> None:
        request = self._request
        if request is None or not self._stream_open():
            raise SessionError("no_stream", "synthesize-stop without an open stream")
        if request.context_id is None:
            self._finish()
            await self._send(SynthesizeStopped().event())
            return
        request.input_done = True
        self._driver.session.end(request.context_id, self._driver.now())

    def _begin(self, voice: VoiceInfo, speaker_id: int | None, streaming: bool) -> str | None:
        """Open the request's context; its id, or None if the session refused it."""
        context_id = f"wyoming-{next(self._ids)}"
        request = _Request(context_id, voice.sample_rate, streaming, input_done=not streaming)
        self._set_request(request)
        session = self._driver.session
        session.start(
            context_id,
            StartOptions(
                voice=voice.name,
                output_format=f"pcm_{voice.sample_rate}",
                settings=VoiceSettings(speaker_id=speaker_id),
                # A whole-text request is rendered as fast as possible (its client may wait
                # for all of it); a streamed one keeps pace with playback like a WebSocket.
                paced=streaming,
            ),
            self._driver.now(),
        )
        if session.open_contexts == 0:
            # The session sent its error event already; nothing will come for this context.
            if streaming:
                request.context_id = None
            else:
                self._finish()
            return None
        return context_id

    def _feed(self, context_id: str, text: str) -> None:
        # Wyoming puts no limit on one event's text; the session limits one message, so long
        # texts go in pieces (its buffer treats them exactly like one string).
        step = self._services.settings.max_message_chars
        now = self._driver.now()
        for start in range(0, len(text), step):
            self._driver.session.text(context_id, text[start : start + step], now)

    def _set_request(self, request: _Request) -> None:
        self._request = request
        self._idle.clear()

    def _finish(self) -> None:
        self._request = None
        self._idle.set()

    # -- server -> client ----------------------------------------------------------------------

    async def _pump(self) -> None:
        """Turn the session's events into Wyoming events, in order, as they come."""
        while True:
            event = await self._driver.outbound.get()
            request = self._request
            if isinstance(event, ErrorOut):
                await self._send(Error(text=event.message, code=event.code).event())
                continue
            if isinstance(event, CloseOut):
                return  # nothing here asks for it; a close request ends the stream of replies
            if request is None or request.context_id != event.context_id:
                continue  # not the current request's: nothing left to answer it
            if isinstance(event, AudioOut):
                await self._audio_start(request)
                chunk = AudioChunk(
                    rate=request.rate,
                    width=SAMPLE_WIDTH,
                    channels=CHANNELS,
                    audio=event.data,
                    timestamp=round(event.offset_ms),
                )
                await self._send(chunk.event())
            elif isinstance(event, DoneOut):
                # An empty text still gets its audio-start/audio-stop pair.
                await self._audio_start(request)
                await self._send(AudioStop().event())
                if request.streaming:
                    await self._send(SynthesizeStopped().event())
                self._finish()
            # TimestampsOut has no Wyoming counterpart, and we never cancel a context.

    async def _audio_start(self, request: _Request) -> None:
        # Sent with the first audio rather than up front, so every audio event goes out from
        # this one task and ordering needs no coordination with the reader.
        if not request.audio_started:
            request.audio_started = True
            start = AudioStart(rate=request.rate, width=SAMPLE_WIDTH, channels=CHANNELS)
            await self._send(start.event())

    async def _send(self, event: Event) -> None:
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel that
        # lands as the write completes, and the writer then never ends.
        async with self._write_lock, asyncio.timeout(self._services.settings.write_timeout_s):
            await async_write_event(event, self._writer)


def _succeeded(task: asyncio.Task[Any]) -> bool:
    return not task.cancelled() and task.exception() is None


def _timed_out(task: asyncio.Task[Any]) -> bool:
    return not task.cancelled() and isinstance(task.exception(), TimeoutError)
