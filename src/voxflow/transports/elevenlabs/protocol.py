"""The ElevenLabs-compatible WebSocket protocol, without I/O (``routes`` runs it).

``WS /v1/text-to-speech/{voice_id}/stream-input`` carries one context and
``WS /v1/text-to-speech/{voice_id}/multi-stream-input`` up to five (ElevenLabs' limit), each a
session context on the connection's session. This module only translates: text
buffering, segmenting, scheduling and cancellation are the session core's.

Client messages (JSON text frames):

* the first message of a context opens it: ``{"text": " ", "voice_settings": {...},
  "generation_config": {"chunk_length_schedule": [...]}}`` (plus ``"context_id"`` on
  multi-stream); only ``voice_settings.speed`` changes the voice;
  ``pronunciation_dictionary_locators`` (up to 3, this server's dictionaries) become the
  context's lexicon; API keys in any spelling are accepted and ignored; ``voice_settings`` in a
  later message of an open context changes the speed of the text that follows;
* ``enable_ssml_parsing=true`` in the query reads every context's text as SSML
  (``voxflow.text.ssml``, ElevenLabs' 3-second break limit, a bare ``&`` or ``<`` is text);
  alignments then index the text with its markup left out;
* ``language_code`` in the query (``ja``, ``en-GB``) must name a language the voice speaks:
  otherwise the connection fails at once (``unsupported_language``, or ``invalid_language`` for
  a value that is no language code), before any text is read;
* ``{"text": "Hello ", "flush": false, "try_trigger_generation": true}`` appends text (the
  segmenter already cuts as early as the schedule allows, so ``try_trigger_generation`` changes
  nothing); ``"flush": true`` then synthesizes everything buffered. A message that starts a
  sentence right after one that ended one, with no space between (Pipecat sends one sentence a
  message), gets a space in front (``voxflow.text.messages``), which the alignment then shows,
  as it shows the space that ends every context's alignment;
* stream-input: ``{"text": ""}`` ends the input: the rest is spoken, ``{"isFinal": true}`` follows
  the last audio and the socket closes;
* multi-stream: ``{"text": "", "context_id": "x"}`` only keeps the connection alive;
  ``{"context_id": "x", "close_context": true}`` closes a context the way ElevenLabs documents it:
  a context whose text was all flushed finishes speaking it and then gets ``isFinal`` (what
  Pipecat sends at the end of every turn), while a context holding text sent since its last flush
  (a barge-in in the middle of a reply), one already closing (Pipecat's barge-in after the end of
  its turn) or a close with ``"immediate": true`` stops at once, with no audio of it after that
  point, and gets ``isFinal``; ``{"close_socket": true}`` closes every context that
  way and the socket once the last ``isFinal`` is out.

Server messages: ``{"audio": "<base64>", "isFinal": null, "normalizedAlignment": {...},
"alignment": {...}}`` where the alignment lists the characters first heard in that chunk with
times in ms from the chunk's start, or from the start of the context's audio with
``sync_alignment=true`` (LiveKit's plugin asks for it and reads them so), ``null`` for a chunk
that starts none; then ``{"isFinal": true}``; multi-stream adds ``"contextId"``. Errors are
``SessionError``s and ``ErrorOut``s, answered ElevenLabs-shaped, ``{"message": ..., "error":
..., "code": 1008}``, and close the socket with that code as ElevenLabs does
(``errors.socket_error``); only a failed synthesis of one segment is reported without closing.
A connection with no client message and no audio for ``inactivity_timeout`` seconds (20 by
default, at most 180) closes with ``input_timeout_exceeded``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.wire import Close, Reply
from voxflow.session.dictionaries import Dictionaries, no_dictionaries, parse_locators
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
from voxflow.session.options import StartOptions, clean_text
from voxflow.session.session import Session
from voxflow.text.messages import separate_sentences
from voxflow.transports.close_codes import FAILURE_CLOSE, NORMAL_CLOSURE, STALL_CLOSE
from voxflow.transports.contexts import ContextTable
from voxflow.transports.elevenlabs import http as elevenlabs_http
from voxflow.transports.elevenlabs.alignment import CharAligner, ChunkAlignment
from voxflow.transports.elevenlabs.errors import socket_error
from voxflow.transports.elevenlabs.http import ws_alignment
from voxflow.transports.elevenlabs.query import (
    DEFAULT_INACTIVITY_S,
    ConnectionOptions,
    parse_connection,
)
from voxflow.transports.json_body import dump

ELEVENLABS_MAX_CONTEXTS = 5
SCHEDULE_RANGE = (50, 500)  # ElevenLabs' bounds for each chunk_length_schedule entry
STREAM_CONTEXT = "stream"  # the one context of stream-input (never shown to the client)


@dataclass
class _Context:
    """One context as the transport sees it."""

    aligner: CharAligner = field(default_factory=CharAligner)
    text: str = ""  # everything sent to it, which word timings index
    unflushed: bool = False  # speakable text arrived since the last flush
    closing: bool = False  # close_context or end of input: finishing its audio


class ElevenLabsProtocol:
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
        voice_id: str,
        query: Mapping[str, str],
        multi: bool,
        dictionaries: Dictionaries = no_dictionaries,
    ) -> None:
        self._clock = clock
        # The lexicon of a context's pronunciation_dictionary_locators (the route's store).
        self._dictionaries = dictionaries
        self._session = session
        self._multi = multi
        self._max_contexts = driver_contexts(context, multi)
        self._max_chars = context.max_segment_chars
        self._contexts: ContextTable[_Context] = ContextTable(clock)
        self._ending = False  # end of input or close_socket: nothing more is read
        self._closing_socket = False
        self._failed = False
        self.options: ConnectionOptions | None = None
        try:
            self.options = parse_connection(context, voice_id, query)
        except SessionError as error:
            self._fail(error)

    @property
    def inactivity_timeout_s(self) -> float:
        return DEFAULT_INACTIVITY_S if self.options is None else self.options.inactivity_timeout_s

    # -- client messages -------------------------------------------------------------------------

    def receive(self, frame: str | bytes) -> None:
        self._contexts.touch()
        if self._failed:
            return
        try:
            self._apply(self._contexts.message(frame))
        except SessionError as error:
            self._fail(error)

    def peer_gone(self) -> bool:
        return True

    def deadline(self) -> float | None:
        """No message and no audio for the inactivity timeout closes the connection."""
        return None if self._failed else self._contexts.inactive_at(self.inactivity_timeout_s)

    def expire(self) -> None:
        """No message and no audio for the inactivity timeout."""
        if self._failed:
            return
        seconds = round(self.inactivity_timeout_s)
        self._fail(
            SessionError(
                "input_timeout_exceeded",
                f"Have not received a new text input within the timeout of {seconds} seconds. "
                "Streaming input terminated. Please make sure to either feed the input in a "
                'timely manner, or to send the end of input text (empty string "") when done.',
            )
        )

    def shutdown(self) -> Reply[str]:
        """ElevenLabs' error frame (``shutting_down``), then close 1012 (service restart)."""
        return self._error(ErrorOut(None, "shutting_down", SHUTTING_DOWN, retryable=True))

    def _fail(self, error: SessionError) -> None:
        # In order behind the events already queued; the writer closes the socket on it.
        self._failed = True
        self._session.error(None, error.code, error.message, error.retryable)

    def _apply(self, message: dict[str, Any]) -> None:
        now = self._clock()
        if self._multi and message.get("close_socket") is True:
            self._close_socket(now)
            return
        if self._ending:
            return
        cid = self._context_id(message)
        text = message.get("text")
        if text is not None and not isinstance(text, str):
            raise SessionError("invalid_message", "text must be a string")
        if text is not None:
            text = clean_text(text)  # alignments index the text as the session has it
        if self._multi and message.get("close_context") is True:
            self._close_context(cid, now, immediate=message.get("immediate") is True)
            return
        flush = message.get("flush") is True
        if not self._multi and text == "":
            self._end_of_input(now)
            return
        if not text and not flush:
            return  # a keep-alive: receiving it already reset the inactivity timer
        context = self._contexts.get(cid)
        if context is None:
            if not text:
                # A flush for a context never opened: opening one here would leave a context
                # the client does not know it has to close.
                return
            context = self._start(cid, message, now)
            if context is None:
                return  # refused (a full server): the error is on its way, the text goes
        elif context.closing:
            raise SessionError(
                "context_closing",
                f"context {cid!r} is closing; wait for its isFinal before reusing the id",
            )
        elif message.get("voice_settings") is not None:
            # A later speed changes the text that follows (settings without one change nothing).
            speed = elevenlabs_http.voice_settings_speed(message.get("voice_settings"))
            if speed is not None:
                self._session.delivery(cid, now, speed=speed)
        if text:
            # Sentences sent as separate messages with no space between them (Pipecat).
            text = separate_sentences(context.text, text)
            self._session.text(cid, text, now)
            # What the alignment indexes: the text as the session took it (SSML's markup out).
            context.text = self._session.written_text(cid) or context.text
            context.unflushed = context.unflushed or not text.isspace()
        if flush:
            self._session.flush(cid, now)
            context.unflushed = False

    def _context_id(self, message: dict[str, Any]) -> str:
        return self._contexts.context_id(message) if self._multi else STREAM_CONTEXT

    def _start(self, cid: str, message: dict[str, Any], now: float) -> _Context | None:
        assert self.options is not None  # a connection without options has failed
        if self._session.open_contexts >= self._max_contexts:
            raise SessionError(
                "too_many_contexts",
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
            lexicon=self._dictionaries(
                parse_locators(message.get("pronunciation_dictionary_locators"))
            ),
            markup=elevenlabs_http.SSML_DIALECT if self.options.ssml else None,
            language=self.options.language,
        )
        if not self._session.start(cid, options, now):
            return None
        context = _Context()
        self._contexts.opened(cid, context)
        return context

    def _schedule(self, config: object) -> tuple[int, ...] | None:
        if config is None:
            return None
        if not isinstance(config, dict):
            raise SessionError("invalid_message", "generation_config must be an object")
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
            raise SessionError(
                "invalid_chunk_length_schedule",
                f"chunk_length_schedule must be a list of numbers between {low} and {high}",
            )
        # A segment never exceeds max_chars, so a larger minimum means "as long as allowed".
        return tuple(min(round(v), self._max_chars) for v in raw)

    def _close_context(self, cid: str, now: float, immediate: bool = False) -> None:
        context = self._contexts.get(cid)
        if context is None:
            # Never opened, or finished: nothing to close. After its end, a close is Pipecat's
            # barge-in (it closes the context on every interruption): its listener stopped.
            self._session.stop_hearing(cid)
            return
        if immediate or context.closing or context.unflushed:
            self._session.cancel(cid, None, now, now)
            self._contexts.close(cid)
        else:
            context.closing = True
            self._session.end(cid, now)

    def _end_of_input(self, now: float) -> None:
        self._ending = True
        context = self._contexts.get(STREAM_CONTEXT)
        if context is None:
            self._session.request_close("end of input")
        else:
            context.closing = True
            self._session.end(STREAM_CONTEXT, now)

    def _close_socket(self, now: float) -> None:
        if self._closing_socket:
            return
        self._ending = self._closing_socket = True
        for cid, context in self._contexts.open_items():
            if not context.closing:
                self._close_context(cid, now)
        self._session.request_close("close_socket")

    # -- session events --------------------------------------------------------------------------

    def reply(self, event: ClientEvent) -> Reply[str]:
        if isinstance(event, TimestampsOut):
            context = self._contexts.current(event.context_id)
            if context is not None:
                context.aligner.add(event, context.text)
            return Reply()
        if isinstance(event, AudioOut):
            self._contexts.touch()
            context = self._contexts.current(event.context_id)
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

    def _final(self, event: DoneOut | CancelledOut) -> Reply[str]:
        cid = event.context_id
        frames = []
        context = self._contexts.finish(cid)
        if context is not None and isinstance(event, DoneOut):
            # Characters after the last word (trailing spaces): sent without audio so the
            # client's text is complete before isFinal. It ends with a space, as ElevenLabs'
            # alignments do: a client that closes a word at a space (Pipecat) would otherwise
            # leave the last word of a reply sent without one untimed.
            text = context.text if context.text[-1:].isspace() else context.text + " "
            rest = context.aligner.finish(text)
            if rest.chars:
                frames.append(self._audio(cid, b"", rest))
        body: dict[str, Any] = {"isFinal": True}
        if self._multi:
            body["contextId"] = cid
        frames.append(dump(body))
        done = not self._multi or (self._closing_socket and not self._contexts.in_flight())
        return Reply(frames, Close(NORMAL_CLOSURE) if done else None)

    def _close(self) -> Reply[str]:
        if self._contexts.in_flight():
            return Reply()  # the last isFinal closes the socket
        # stream-input ended before any text: its (empty) generation is final all the same.
        frames = [] if self._multi else [dump({"isFinal": True})]
        return Reply(frames, Close(NORMAL_CLOSURE))

    def _error(self, event: ErrorOut) -> Reply[str]:
        if event.code == "unknown_context":
            # Only contexts open in this protocol's view are named to the session, so this is a
            # close that crossed the context's end (its isFinal is on its way): no error.
            return Reply()
        error = socket_error(event.code, event.message)
        if error.close_code is None:
            return Reply([dump(error.frame)])
        self._failed = True
        return Reply([dump(error.frame)], Close(error.close_code, event.message))

    def _audio(self, cid: str, data: bytes, alignment: ChunkAlignment) -> str:
        sync = self.options is not None and self.options.sync_alignment
        chars = ws_alignment(alignment, from_context_start=sync)
        body: dict[str, Any] = {
            "audio": base64.b64encode(data).decode("ascii"),
            "isFinal": None,
            # voxflow speaks the text as sent: the normalized alignment is the same.
            "normalizedAlignment": chars,
            "alignment": chars,
        }
        if self._multi:
            body["contextId"] = cid
        return dump(body)


def driver_contexts(context: ProtocolContext, multi: bool) -> int:
    """How many contexts a connection may have open: ElevenLabs' limit, or the server's if lower."""
    if not multi:
        return 1
    return min(ELEVENLABS_MAX_CONTEXTS, context.max_contexts)
