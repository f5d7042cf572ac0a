"""The Cartesia-compatible WebSocket protocol, without I/O (``routes`` runs it).

``WS /tts/websocket`` carries any number of contexts (up to the server's per-connection limit),
each a session context on the connection's session. This module only translates: text
buffering, segmenting, scheduling and cancellation are the session core's. The
``Cartesia-Version`` header (or ``cartesia_version`` query parameter) and the API key are
accepted whatever they say (``server.security`` checks keys when the server has some).

Client messages (JSON text frames):

* a generation request, ``{"context_id", "transcript", "continue", "model_id", "voice",
  "output_format", "add_timestamps", "max_buffer_delay_ms", "generation_config", "flush", ...}``.
  The first one of a context opens it, and its voice, output format, speed, language and
  timestamps are the context's (later requests' are not read, as Cartesia locks them per
  context). Its ``language`` (or ``locale``) must be one the voice speaks: a mismatch refuses
  the context (``unsupported_language``) before any of its text is spoken. Its
  transcript is appended to the context's text. ``continue`` (false when absent, as Cartesia's)
  false ends the context: the rest is spoken, then ``done``. ``flush: true`` synthesizes what is
  buffered and starts a new flush group. ``max_buffer_delay_ms: 0`` flushes after every
  transcript (the client buffers by itself: Pipecat's and LiveKit's sentence mode); otherwise
  voxflow's segmenter decides when to start (Cartesia's "managed buffering"), and text still
  unspoken ``max_buffer_delay_ms`` (3000 by default) after the last transcript is synthesized as
  it is. A context with no request for ``CONTEXT_IDLE_S`` is ended as if ``continue`` were false;
* a transcript may hold Cartesia's inline tags (``<break time="1s"/>``, ``<speed ratio="1.2"/>``,
  ``<volume ratio="0.8"/>``, ``<spell>...</spell>``; ``voxflow.text.ssml.CARTESIA_TAGS``), a tag
  split across requests held until it is complete; word timestamps index the transcripts with
  the tags left out;
* ``{"context_id", "cancel": true}`` stops a context at once: no more of its messages are sent
  (a context that is not open is ignored: Pipecat cancels on every interruption).

Server messages, each with the ``context_id`` it belongs to: ``chunk`` (``data``: base64 audio,
``done: false``, ``status_code: 206``, ``step_time``, ``flush_id``), ``timestamps`` (when the
context asked with ``add_timestamps``: ``word_timestamps`` ``{"words", "start", "end"}`` in
seconds from the start of the context's audio), ``flush_done`` after a flush group's last audio,
and ``done`` (``done: true``) after the context's last. A refused request or a failure is
Cartesia's ``error`` event (``errors.socket_error``; ``context_id`` null for an error of the
connection, such as a frame that is not JSON); like Cartesia's, its ``done: true`` ends that
context (an open one is cancelled), and the connection goes on. A connection with no client
message and no audio for five minutes (Cartesia's idle limit) closes normally.
"""

from __future__ import annotations

import base64
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.wire import Close, Reply
from voxflow.session.dictionaries import Dictionaries, no_dictionaries
from voxflow.session.errors import SHUTTING_DOWN, SessionError
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    ClientEvent,
    CloseOut,
    DoneOut,
    ErrorOut,
    TimestampsOut,
)
from voxflow.session.options import StartOptions, clean_text, finite_number, shown
from voxflow.session.session import Session
from voxflow.text.messages import separate_sentences
from voxflow.text.ssml import CARTESIA_TAGS
from voxflow.transports.cartesia import fields
from voxflow.transports.cartesia.errors import socket_error
from voxflow.transports.cartesia.samples import Float32Samples
from voxflow.transports.cartesia.words import FlushIds, WordCursor
from voxflow.transports.close_codes import (
    FAILURE_CLOSE,
    NORMAL_CLOSURE,
    SERVICE_RESTART,
    STALL_CLOSE,
)
from voxflow.transports.contexts import ContextTable
from voxflow.transports.json_body import dump

__all__ = ["INACTIVITY_S", "CartesiaProtocol"]

INACTIVITY_S = 300.0  # Cartesia closes a socket idle for five minutes; Pipecat reconnects
# Cartesia's default max_buffer_delay_ms: text left unspoken this long after the last transcript
# is synthesized as it is.
DEFAULT_BUFFER_DELAY_S = 3.0
# A context with no request for this long is ended as if ``continue`` were false. LiveKit drops an
# interrupted stream's context without a cancel or an end; this frees its admission slot.
CONTEXT_IDLE_S = 60.0
_PARTIAL = 206  # Cartesia's status_code on every message of a generation under way


@dataclass
class _Context:
    """One context as the transport sees it."""

    audio: fields.AudioFormat
    timestamps: bool  # add_timestamps
    flush_each: bool  # max_buffer_delay_ms 0: every transcript is flushed
    last_chunk_at: float  # when it opened or sent its last chunk (step_time)
    last_input: float  # when its last request arrived
    delay_s: float  # max_buffer_delay_ms, in seconds
    flush_at: float | None = None  # when its unflushed text is synthesized as it is
    text: str = ""  # everything sent to it, which word timings index
    ending: bool = False  # continue false: finishing its audio
    dead: bool = False  # an error ended it for the client: nothing more of it goes out
    words: WordCursor = field(default_factory=WordCursor)
    flushes: FlushIds = field(default_factory=FlushIds)
    float32: Float32Samples | None = None


class CartesiaProtocol:
    """Protocol state of one connection, without I/O: ``receive`` applies a client frame to the
    session; ``reply`` turns a session event into frames (see
    ``voxflow.connection.wire.WireProtocol``)."""

    stall_close = STALL_CLOSE
    failure_close = FAILURE_CLOSE

    def __init__(
        self,
        session: Session,
        clock: Callable[[], float],
        context: ProtocolContext,
        dictionaries: Dictionaries = no_dictionaries,
    ) -> None:
        self._session = session
        self._clock = clock
        self._context = context
        self._dictionaries = dictionaries  # pronunciation_dict_id's (the connection's owner's)
        self._contexts: ContextTable[_Context] = ContextTable(clock)
        # Refusals the reader has dealt with already, by id, in order: their (code, message),
        # or None for a start the session refused (its error is the next of that id from the
        # session). Their events must not stop a context reopened under the same id since, and
        # an error the session reports of an older context must not be taken for one of them.
        self._settled: dict[str, deque[tuple[str, str] | None]] = {}
        self._expired = False

    # -- client messages -------------------------------------------------------------------------

    def receive(self, frame: str | bytes) -> None:
        self._contexts.touch()
        try:
            message = self._contexts.message(frame)
            cid = self._contexts.context_id(message)
        except SessionError as error:
            self._session.error(None, error.code, error.message, error.retryable)
            return
        try:
            self._apply(cid, message)
        except SessionError as error:
            self._refuse(cid, error)

    def peer_gone(self) -> bool:
        return True

    def deadline(self) -> float | None:
        """The next of: a context's buffer delay, a context's idle end, and the connection's
        inactivity close (no message and no audio for ``INACTIVITY_S``)."""
        if self._expired:
            return None
        due = self._contexts.inactive_at(INACTIVITY_S)
        for context in self._contexts:
            if not context.ending:
                due = min(due, context.last_input + CONTEXT_IDLE_S)
                if context.flush_at is not None:
                    due = min(due, context.flush_at)
        return due

    def expire(self) -> None:
        now = self._clock()
        for cid, context in self._contexts.open_items():
            if context.ending:
                continue
            if context.last_input + CONTEXT_IDLE_S <= now:
                context.ending = True
                context.flush_at = None
                self._session.end(cid, now)
            elif context.flush_at is not None and context.flush_at <= now:
                context.flush_at = None
                self._session.flush(cid, now)
        if self._contexts.inactive_at(INACTIVITY_S) <= now:
            self._expired = True
            self._session.request_close("inactivity timeout")

    def shutdown(self) -> Reply[str]:
        """An error event for the connection (``shutting_down``), then close 1012."""
        frame = socket_error(None, "shutting_down", SHUTTING_DOWN)
        return Reply([dump(frame)], Close(SERVICE_RESTART, "server shutting down"))

    def _refuse(self, cid: str, error: SessionError) -> None:
        """A request of context ``cid`` was refused: the error ends that context, as its
        ``done: true`` tells the client."""
        self._drop(cid)
        self._settle(cid, (error.code, error.message))
        self._session.error(cid, error.code, error.message, error.retryable)

    def _settle(self, cid: str, refusal: tuple[str, str] | None) -> None:
        self._settled.setdefault(cid, deque()).append(refusal)

    def _settles(self, event: ErrorOut) -> bool:
        """``event`` is the error of a refusal the reader has dealt with: take it off the list."""
        pending = self._settled.get(event.context_id or "")
        if not pending or pending[0] not in (None, (event.code, event.message)):
            return False
        pending.popleft()
        if not pending:
            del self._settled[event.context_id or ""]
        return True

    def _drop(self, cid: str) -> None:
        """Stop the open context ``cid``, if there is one: it is cancelled, and nothing more of
        it goes out (not even a ``done`` that crosses the cancel)."""
        context = self._contexts.close(cid)
        if context is None:
            # Never opened, refused, or ended: nothing to stop. After its end, a cancel is a
            # barge-in (Pipecat cancels on every interruption): its listener stopped.
            self._session.stop_hearing(cid)
            return
        context.dead = True
        now = self._clock()
        self._session.cancel(cid, None, now, now)

    def _apply(self, cid: str, message: dict[str, Any]) -> None:
        now = self._clock()
        if message.get("cancel") is True:
            self._drop(cid)
            return
        transcript = message.get("transcript")
        if transcript is None:
            transcript = ""
        if not isinstance(transcript, str):
            raise SessionError("invalid_message", "transcript must be a string")
        transcript = clean_text(transcript)  # word timings index the text as the session has it
        more = _flag(message, "continue")
        flush = _flag(message, "flush")
        context = self._contexts.get(cid)
        if context is None:
            context = self._start(cid, message, now)
            if context is None:
                return  # refused (a bad option, a full server): the error is on its way
        context.last_input = now
        if context.ending:
            if transcript or flush:
                raise SessionError(
                    "context_closing",
                    f"context {cid!r} has ended (continue was false); wait for its done before "
                    "reusing the id",
                )
            return  # another end of the same context: nothing to do
        if transcript:
            # Sentences sent as separate requests with no space between them.
            transcript = separate_sentences(context.text, transcript)
            self._session.text(cid, transcript, now)
            # What word timings index: the text as the session took it (tags left out).
            context.text = self._session.written_text(cid) or context.text
            if context.flush_each:
                self._session.flush(cid, now)
            else:
                context.flush_at = now + context.delay_s
        if flush:
            self._session.flush(cid, now)
            context.flushes.flush(len(context.text))
            context.flush_at = None
        if not more:
            context.ending = True
            context.flush_at = None
            self._session.end(cid, now)

    def _start(self, cid: str, message: dict[str, Any], now: float) -> _Context | None:
        if not isinstance(message.get("model_id"), str | None):
            raise SessionError("invalid_message", "model_id must be a string")
        audio = fields.audio_format(message.get("output_format"), fields.WS_CONTAINERS)
        voice = fields.resolve_voice(self._context, message.get("voice"))
        language = fields.language(self._context, voice, message)
        delay = finite_number(message.get("max_buffer_delay_ms"), "max_buffer_delay_ms")
        if delay is not None and delay < 0:
            raise SessionError("invalid_message", f"max_buffer_delay_ms must be >= 0, got {delay}")
        timestamps = _flag(message, "add_timestamps")
        options = StartOptions(
            voice=voice,
            output_format=audio.name,
            settings=fields.speed_settings(message),
            lexicon=fields.dictionary_lexicon(
                message.get("pronunciation_dict_id"), self._dictionaries
            ),
            markup=CARTESIA_TAGS,
            language=language,
        )
        # Everything that can be refused is checked by now: an opened context is always tracked.
        if not self._session.start(cid, options, now):
            self._settle(cid, None)  # the session refused it, and its error is queued
            return None
        context = _Context(
            audio=audio,
            timestamps=timestamps,
            flush_each=delay == 0,
            last_chunk_at=now,
            last_input=now,
            delay_s=DEFAULT_BUFFER_DELAY_S if delay is None else delay / 1000.0,
            float32=Float32Samples() if audio.float32 else None,
        )
        self._contexts.opened(cid, context)
        return context

    # -- session events --------------------------------------------------------------------------

    def reply(self, event: ClientEvent) -> Reply[str]:
        if isinstance(event, TimestampsOut):
            return self._timestamps(event)
        if isinstance(event, AudioOut):
            self._contexts.touch()
            return self._chunk(event)
        if isinstance(event, DoneOut):
            return self._done(event)
        if isinstance(event, CancelledOut):
            self._contexts.finish(event.context_id)
            return Reply()  # Cartesia sends nothing more for a cancelled context
        if isinstance(event, CloseOut):
            return Reply(close=Close(NORMAL_CLOSURE, event.reason))
        return self._error(event)

    def _timestamps(self, event: TimestampsOut) -> Reply[str]:
        context = self._contexts.current(event.context_id)
        if context is None or context.dead:
            return Reply()
        cid = event.context_id
        frames = [self._flush_done(cid, n) for n in context.flushes.reached(event.words)]
        words = context.words.words(event.words, context.text)
        if context.timestamps and words.words:
            body = self._message("timestamps", cid)
            body["flush_id"] = context.flushes.current
            body["word_timestamps"] = {
                "words": list(words.words),
                "start": list(words.start),
                "end": list(words.end),
            }
            frames.append(dump(body))
        return Reply(frames)

    def _chunk(self, event: AudioOut) -> Reply[str]:
        context = self._contexts.current(event.context_id)
        if context is None or context.dead:
            return Reply()
        data = event.data if context.float32 is None else context.float32.convert(event.data)
        if not data:
            return Reply()  # LiveKit takes a chunk without data for the end of the context
        now = self._clock()
        body = self._message("chunk", event.context_id)
        body["data"] = base64.b64encode(data).decode("ascii")
        body["step_time"] = round(1000.0 * max(0.0, now - context.last_chunk_at), 1)
        body["flush_id"] = context.flushes.current
        context.last_chunk_at = now
        return Reply([dump(body)])

    def _done(self, event: DoneOut) -> Reply[str]:
        cid = event.context_id
        context = self._contexts.finish(cid)
        if context is None or context.dead:
            return Reply()  # its error already told the client it was over
        frames = [self._flush_done(cid, n) for n in context.flushes.finish()]
        body = self._message("done", cid)
        body["done"] = True
        frames.append(dump(body))
        return Reply(frames)

    def _error(self, event: ErrorOut) -> Reply[str]:
        cid = event.context_id
        if event.code == "unknown_context":
            # Only contexts open in this protocol's view are ever named to the session, so this
            # is a stop that crossed the context's end (its done is queued): nothing to report.
            return Reply()
        if cid is not None and not self._settles(event):
            if event.code == "encoding_failed":
                # The session has dropped that context already: this error is its last event.
                self._contexts.finish(cid)
            elif self._contexts.current(cid) is self._contexts.get(cid):
                # An error of an open context (a failed segment, a full text buffer) ends it,
                # as its ``done: true`` tells the client. One of an older context, closed by the
                # reader since, leaves the context reopened under its id alone.
                self._drop(cid)
        return Reply([dump(socket_error(cid, event.code, event.message))])

    def _flush_done(self, cid: str, flush_id: int) -> str:
        body = self._message("flush_done", cid)
        body["flush_done"] = True
        body["flush_id"] = flush_id
        return dump(body)

    @staticmethod
    def _message(kind: str, cid: str) -> dict[str, Any]:
        return {"type": kind, "context_id": cid, "done": False, "status_code": _PARTIAL}


def _flag(message: dict[str, Any], name: str) -> bool:
    """A boolean field; absent or null is false."""
    value = message.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise SessionError("invalid_message", f"{name} must be true or false, got {shown(value)}")
    return value
