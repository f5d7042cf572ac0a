"""The Wyoming protocol (Home Assistant's voice pipeline), without I/O (``tcp`` runs it).

One request at a time (Wyoming has no request ids), each request one session context whose audio
goes out as ``audio-chunk`` events as soon as it is rendered.

Event sequences (client -> server: server -> client):

* ``describe``: ``info`` with one ``TtsProgram`` listing every voice, streaming supported.
* ``synthesize``: ``audio-start``, ``audio-chunk``..., ``audio-stop``.
* ``synthesize-start``, ``synthesize-chunk``..., [``synthesize``], ``synthesize-stop``:
  ``audio-start``, ``audio-chunk``..., ``audio-stop``, ``synthesize-stopped``. Audio starts while
  text is still arriving. Home Assistant sends the whole text again as a ``synthesize`` between the
  last chunk and ``synthesize-stop`` (for servers without streaming); inside an open stream that
  event is ignored, as wyoming-piper does.
* A bad request (unknown voice or speaker, a ``voice.language`` the named voice does not speak
  or no voice speaks, malformed event): ``error`` instead of any audio, and
  the connection stays usable. A stream whose ``synthesize-start`` failed still answers its
  ``synthesize-stop`` with ``synthesize-stopped``, because Home Assistant waits for that event.
  A malformed event after which the byte stream cannot be trusted (``BadEvent.fatal``): ``error``,
  then the connection closes.
* ``ping``: ``pong``. Other events are dropped, as Wyoming peers do with events they do not know.

Order: once a request is complete (its ``synthesize``, or its stream's ``synthesize-stop``),
whatever the client sends next waits, in order, until that request's answer is out; each is then
applied as if it had just arrived. While a stream's text is still arriving, events are applied at
once: the stream's own events must reach it, and a client may wait for a ``pong`` or ``info``
before it ends the stream.

Answers that need no session (``info``, ``pong``, the protocol's own errors) are returned by
``receive`` when the connection is idle, or with the reply that finished the request they waited
for. A client that half-closes after a complete request still gets the answers owed, then the
connection closes (``peer_gone``).
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.wire import Close, Reply
from voxflow.engines.base import VoiceInfo, VoiceSettings
from voxflow.session.errors import SHUTTING_DOWN, SessionError
from voxflow.session.events import AudioOut, ClientEvent, CloseOut, DoneOut, ErrorOut
from voxflow.session.options import StartOptions, text_format
from voxflow.session.session import Session
from voxflow.text.ssml import SsmlDialect
from voxflow.transports.close_codes import FAILURE_CLOSE, NORMAL_CLOSURE, STALL_CLOSE
from voxflow.transports.wyoming import events
from voxflow.transports.wyoming.framing import BadEvent
from voxflow.transports.wyoming.info import build_info, resolve_voice

with warnings.catch_warnings():
    # wyoming.info imports wyoming.audio, which imports the deprecated stdlib ``audioop`` on
    # 3.11-3.12 (unused here; see ``events``).
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    from wyoming.event import Event
    from wyoming.info import Describe
    from wyoming.ping import Ping
    from wyoming.tts import (
        Synthesize,
        SynthesizeChunk,
        SynthesizeStart,
        SynthesizeStop,
        SynthesizeVoice,
    )

__all__ = ["WyomingFrame", "WyomingProtocol"]

log = logging.getLogger(__name__)

# What the TCP adapter reads: an event, or why the bytes were not one.
WyomingFrame = Event | BadEvent

# TCP has no close codes; these only name why the connection ends (``Close`` wants one).
NORMAL_CLOSE = Close(NORMAL_CLOSURE)
# Errors after which the session sends nothing more for the context (no ``DoneOut``).
ENDS_CONTEXT = frozenset({"encoding_failed"})


@dataclass
class _Request:
    """The request being answered; ``context_id`` None is a stream with nothing to synthesize
    (its start failed, or its context did)."""

    context_id: str | None
    rate: int
    streaming: bool
    input_done: bool  # all its text is in: what is left is to send the rest of the answer
    audio_started: bool = False
    # The session refused the context: its error event, already queued, ends the request.
    start_failed: bool = False


class WyomingProtocol:
    """One Wyoming connection's protocol state (see ``voxflow.connection.wire.WireProtocol``)."""

    stall_close = STALL_CLOSE
    failure_close = FAILURE_CLOSE

    def __init__(
        self, session: Session, clock: Callable[[], float], context: ProtocolContext
    ) -> None:
        self._session = session
        self._clock = clock
        self._context = context
        self._request: _Request | None = None
        # Frames that arrived while a request was being answered, oldest first.
        self._waiting: deque[WyomingFrame] = deque()
        self._ids = itertools.count(1)
        self._input_ended = False  # the client sent its last frame
        self._closing = False  # a fatal framing error: nothing more is read

    # -- client -> server --------------------------------------------------------------------------

    def receive(self, frame: WyomingFrame) -> Reply[Event]:
        """Apply one frame, or queue it behind the answer in progress; the answers that need no
        session, to send now."""
        if self._closing:
            return Reply()
        if self._answering():
            self._waiting.append(frame)
            return Reply()
        return self._apply(frame)

    def peer_gone(self) -> bool:
        """True ends the connection now; False while a complete request's answer is owed (the
        reply that finishes the last of them closes the connection)."""
        self._input_ended = True
        return not self._answering()

    def deadline(self) -> float | None:
        return None  # Wyoming has no inactivity timeout

    def expire(self) -> None:
        raise AssertionError("the Wyoming protocol sets no deadline")

    def shutdown(self) -> Reply[Event]:
        """An ``error`` event (``shutting_down``), then the connection closes."""
        return Reply([events.error_event("shutting_down", SHUTTING_DOWN)], NORMAL_CLOSE)

    def _answering(self) -> bool:
        """A complete request is being answered: what arrives now waits for its answer."""
        request = self._request
        return request is not None and request.input_done

    def _stream_open(self) -> bool:
        request = self._request
        return request is not None and request.streaming and not request.input_done

    def _apply(self, frame: WyomingFrame) -> Reply[Event]:
        if isinstance(frame, BadEvent):
            reply = [events.error_event(frame.code, frame.message)]
            if frame.fatal:
                # The framing after it cannot be trusted: the adapter reads no further.
                self._closing = True
                return Reply(reply, NORMAL_CLOSE)
            return Reply(reply)
        try:
            return Reply(self._handle(frame))
        except SessionError as error:
            return Reply([events.error_event(error.code, error.message)])

    def _handle(self, event: Event) -> list[Event]:
        kind, data = event.type, event.data
        if not isinstance(data, dict):
            raise SessionError("invalid_event", f"{kind} data must be an object")
        if Describe.is_type(kind):
            return [build_info(self._context).event()]
        if Ping.is_type(kind):
            return [events.pong(data)]
        if Synthesize.is_type(kind):
            self._synthesize(data)
            return []
        if SynthesizeStart.is_type(kind):
            self._synthesize_start(data)
            return []
        if SynthesizeChunk.is_type(kind):
            self._synthesize_chunk(data)
            return []
        if SynthesizeStop.is_type(kind):
            return self._synthesize_stop()
        log.debug("ignoring Wyoming event %r", kind)
        return []

    def _synthesize(self, data: dict[str, Any]) -> None:
        if self._stream_open():
            return  # the copy of the streamed text that Home Assistant sends for old servers
        text = events.request_text(data, "synthesize")
        markup = text_format(data.get("text_format"))
        requested = events.requested_voice(data, "synthesize")
        voice, speaker_id = resolve_voice(self._context, requested)
        context_id = self._begin(
            voice, speaker_id, streaming=False, markup=markup, language=_language(requested)
        )
        if context_id is not None:
            self._feed(context_id, text)
            self._session.end(context_id, self._clock())

    def _synthesize_start(self, data: dict[str, Any]) -> None:
        if self._stream_open():
            raise SessionError(
                "stream_open", "a synthesis stream is already open; send synthesize-stop first"
            )
        try:
            markup = text_format(data.get("text_format"))
            requested = events.requested_voice(data, "synthesize-start")
            voice, speaker_id = resolve_voice(self._context, requested)
        except SessionError:
            # The client goes on with this stream's chunks and waits for synthesize-stopped, so
            # the stream stays open (with nothing to synthesize) until its synthesize-stop.
            self._request = _Request(None, 0, streaming=True, input_done=False)
            raise
        self._begin(voice, speaker_id, streaming=True, markup=markup, language=_language(requested))

    def _synthesize_chunk(self, data: dict[str, Any]) -> None:
        request = self._request
        if request is None or not self._stream_open():
            raise SessionError("no_stream", "synthesize-chunk needs synthesize-start first")
        text = events.request_text(data, "synthesize-chunk")
        # No context open: it failed and its error is on its way (``reply`` ends the stream);
        # text now would open a new one.
        if request.context_id is not None and self._session.open_contexts > 0:
            self._feed(request.context_id, text)

    def _synthesize_stop(self) -> list[Event]:
        request = self._request
        if request is None or not self._stream_open():
            raise SessionError("no_stream", "synthesize-stop without an open stream")
        request.input_done = True
        if request.context_id is None:
            self._request = None
            return [events.synthesize_stopped()]
        if self._session.open_contexts == 0:
            # Its context failed and its error, still on its way, ends the request (``reply``).
            return []
        self._session.end(request.context_id, self._clock())
        return []

    def _begin(
        self,
        voice: VoiceInfo,
        speaker_id: int | None,
        streaming: bool,
        markup: SsmlDialect | None = None,
        language: str | None = None,
    ) -> str | None:
        """Open the request's context; its id, or None if the session refused it."""
        context_id = f"wyoming-{next(self._ids)}"
        request = _Request(context_id, voice.sample_rate, streaming, input_done=not streaming)
        self._request = request
        opened = self._session.start(
            context_id,
            StartOptions(
                voice=voice.name,
                output_format=f"pcm_{voice.sample_rate}",
                settings=VoiceSettings(speaker_id=speaker_id),
                # A whole-text request is rendered as fast as possible (its client may wait
                # for all of it); a streamed one keeps pace with playback like a WebSocket.
                paced=streaming,
                markup=markup,
                # Checked by ``resolve_voice`` already; the session checks it once more, as it
                # does for every protocol.
                language=language,
            ),
            self._clock(),
        )
        if not opened:
            # The session refused it and queued its error event; nothing else comes for it.
            if streaming:
                request.context_id = None
            else:
                request.start_failed = True
            return None
        return context_id

    def _feed(self, context_id: str, text: str) -> None:
        # Wyoming puts no limit on one event's text; the session limits one message, so long
        # texts go in pieces (its buffer treats them exactly like one string).
        step = self._context.max_message_chars
        now = self._clock()
        for start in range(0, len(text), step):
            self._session.text(context_id, text[start : start + step], now)

    # -- server -> client --------------------------------------------------------------------------

    def reply(self, event: ClientEvent) -> Reply[Event]:
        """The Wyoming events for one session event, in order, as they come."""
        if isinstance(event, CloseOut):
            return Reply((), NORMAL_CLOSE)
        request = self._request
        current = (
            request is not None
            and request.context_id is not None
            and request.context_id == event.context_id
        )
        if isinstance(event, ErrorOut):
            error = events.error_event(event.code, event.message)
            if request is None or not current:
                return Reply([error])
            if request.start_failed or event.code in ENDS_CONTEXT:
                return self._failed(request, error)
            return Reply([error])
        if request is None or not current:
            return Reply()  # not the current request's: nothing left to answer it
        if isinstance(event, AudioOut):
            chunk = events.audio_chunk(request.rate, event.data, event.offset_ms)
            return Reply([*self._audio_start(request), chunk])
        if isinstance(event, DoneOut):
            # An empty text still gets its audio-start/audio-stop pair.
            answer = [*self._audio_start(request), events.audio_stop()]
            if request.streaming:
                answer.append(events.synthesize_stopped())
            return self._finish(answer)
        return Reply()  # timestamps have no Wyoming counterpart, and nothing is ever cancelled

    def _audio_start(self, request: _Request) -> list[Event]:
        # Sent with the first audio rather than up front: a request refused by the session gets
        # its error instead of any audio.
        if request.audio_started:
            return []
        request.audio_started = True
        return [events.audio_start(request.rate)]

    def _failed(self, request: _Request, error: Event) -> Reply[Event]:
        """The request's context ended with ``error``: nothing more comes for it."""
        if request.streaming and not request.input_done:
            # Its chunks are still arriving; its synthesize-stop gets synthesize-stopped.
            request.context_id = None
            return Reply([error])
        return self._finish([error, events.synthesize_stopped()] if request.streaming else [error])

    def _finish(self, answer: list[Event]) -> Reply[Event]:
        """The current request is answered: apply what waited for it, in order."""
        self._request = None
        while self._waiting and not self._answering():
            applied = self._apply(self._waiting.popleft())
            answer.extend(applied.frames)
            if applied.close is not None:
                return Reply(answer, applied.close)
        if self._input_ended and not self._answering():
            return Reply(answer, NORMAL_CLOSE)  # the client half-closed: it has every answer
        return Reply(answer)


def _language(requested: SynthesizeVoice | None) -> str | None:
    """The language a request names (Home Assistant may send an empty one: none)."""
    return (requested.language or None) if requested is not None else None
