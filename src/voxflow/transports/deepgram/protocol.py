"""The Deepgram Aura-compatible WebSocket protocol (``WS /v1/speak``), without I/O.

``routes`` accepts the socket, sends ``Metadata`` and runs this on the session's runner. One
connection speaks one stream of text, cut into *turns* by the client's ``Flush`` messages; each
turn is one session context, opened by its first text, so an idle connection holds no stream
slot. This module only translates: buffering, segmenting, scheduling and cancellation are the
session core's.

Client messages (JSON text frames):

* ``{"type": "Speak", "text": "..."}`` appends text (at most 2000 characters a message, Deepgram's
  limit). The segmenter cuts it as it comes, so audio starts at the first sentence (or clause),
  before any ``Flush``;
* ``{"type": "Flush"}`` ends the turn: everything buffered is spoken, then ``{"type":
  "Flushed", "sequence_id": n}`` follows the turn's last audio. ``n`` counts the connection's
  Flush and Clear messages from 0 (the first Flush is answered with 0). A Flush with nothing
  unflushed is answered at once, after the audio already on its way. More than 20 Flushes in 60
  seconds get a ``Warning`` and are not processed, as Deepgram does;
* ``{"type": "Clear"}`` drops everything: the turn being spoken stops (no audio of it follows
  ``Cleared``), text not yet spoken is forgotten, no ``Flushed`` is sent for a Flush it
  overtook, and ``{"type": "Cleared", "sequence_id": n}`` answers it (``n`` from the same count);
* ``{"type": "Close"}`` ends the input: the text not yet flushed is spoken as a last turn (with
  no ``Flushed``, since no Flush asked for one), then the socket closes with 1000.

Turns are spoken one after the other: text of a new turn that arrives while the previous one is
still being spoken waits for it in this object (bounded as a session's buffer is), so a turn's
audio never interleaves with the next one's.

Server messages: the audio as binary frames (the raw encoding asked for), ``Flushed``,
``Cleared``, ``Warning`` (a Flush over the rate limit, a segment that failed to synthesize) and,
for a fatal problem, ``{"type": "Error", "code": ..., "description": ...}`` followed by the close
Deepgram uses for it (``errors.socket_error``).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from voxflow.connection.wire import Close, Reply
from voxflow.session.errors import SHUTTING_DOWN, SessionError
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    ClientEvent,
    DoneOut,
    ErrorOut,
)
from voxflow.session.options import StartOptions, clean_text, shown
from voxflow.session.session import Session
from voxflow.transports.close_codes import FAILURE_CLOSE, NORMAL_CLOSURE, STALL_CLOSE
from voxflow.transports.deepgram.errors import socket_error, warning
from voxflow.transports.deepgram.query import SpeakOptions
from voxflow.transports.json_body import decode_object, dump
from voxflow.version import __version__

__all__ = [
    "FLUSH_LIMIT",
    "FLUSH_WINDOW_S",
    "SPEAK_MAX_CHARS",
    "DeepgramProtocol",
    "WebSocketFrame",
    "metadata",
]

log = logging.getLogger(__name__)

WebSocketFrame = str | bytes
SPEAK_MAX_CHARS = 2000  # Deepgram's limit on one Speak message's text
FLUSH_LIMIT = 20  # Deepgram processes at most this many Flushes ...
FLUSH_WINDOW_S = 60.0  # ... in any window of this many seconds


def metadata(request_id: str, options: SpeakOptions) -> str:
    """The ``Metadata`` message Deepgram sends when the connection opens: the model that
    speaks is the voxflow voice."""
    return dump(
        {
            "type": "Metadata",
            "request_id": request_id,
            "model_name": options.voice,
            "model_version": __version__,
            "model_uuid": model_uuid(options.voice),
        }
    )


def model_uuid(voice: str) -> str:
    """A stable id for a voice, in the UUID shape Deepgram's ``model_uuid`` has."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"voxflow:voice:{voice}"))


@dataclass
class _Turn:
    """The text between two Flushes: one session context once it speaks."""

    number: int
    waiting: list[str] = field(default_factory=list)  # text held until the turn can speak
    waiting_chars: int = 0
    cid: str | None = None  # its context, once open in the session
    ended: bool = False  # no more input: a Flush, a Clear or Close ended it
    sequence_id: int | None = None  # the Flush that ended it: Flushed follows its audio
    cleared: int | None = None  # the Clear that cancelled it: Cleared follows its end


@dataclass(frozen=True)
class _Answer:
    """A control answer that must follow everything before it (the Flushed of an empty turn, a
    Cleared with nothing to cancel)."""

    frame: str
    cleared: bool  # a Cleared: it survives a later Clear (each Clear gets its answer)


class DeepgramProtocol:
    """Protocol state of one connection, without I/O (see ``voxflow.connection.runner``)."""

    stall_close = STALL_CLOSE
    failure_close = FAILURE_CLOSE

    def __init__(
        self,
        session: Session,
        clock: Callable[[], float],
        options: SpeakOptions,
        max_buffered_chars: int,
    ) -> None:
        self._session = session
        self._clock = clock
        self._options = options
        self._max_buffered_chars = max_buffered_chars
        self._numbers = itertools.count(1)
        # The turn whose context is open in the session (or whose end the writer has not handled
        # yet), and what waits behind it, in order.
        self._active: _Turn | None = None
        self._queue: deque[_Turn | _Answer] = deque()
        self._next_sequence = 0
        self._flushes: deque[float] = deque()  # when the recent processed Flushes came
        self._cancelled: set[str] = set()  # contexts cancelled by a Clear
        self._closing = False  # Close came: nothing more is read
        self._failed = False

    # -- client messages -------------------------------------------------------------------------

    def receive(self, frame: WebSocketFrame) -> Reply[WebSocketFrame] | None:
        if self._failed or self._closing:
            return None
        try:
            if isinstance(frame, bytes):
                raise SessionError(
                    "invalid_message", "binary frames are not accepted; send JSON text messages"
                )
            return self._apply(decode_object(frame))
        except SessionError as error:
            self._fail(error)
            return None

    def _apply(self, message: dict[str, Any]) -> Reply[WebSocketFrame] | None:
        now = self._clock()
        kind = message.get("type")
        if kind == "Speak":
            self._speak(message.get("text"), now)
            return None
        if kind == "Flush":
            return self._flush(now)
        if kind == "Clear":
            return self._clear(now)
        if kind == "Close":
            return self._close(now)
        raise SessionError(
            "unknown_type",
            f"unknown message type {shown(kind)}; expected Speak, Flush, Clear or Close",
        )

    def _speak(self, text: object, now: float) -> None:
        if not isinstance(text, str):
            raise SessionError("invalid_message", "a Speak message needs a string text")
        if len(text) > SPEAK_MAX_CHARS:
            raise SessionError(
                "text_too_long",
                f"a Speak message may hold at most {SPEAK_MAX_CHARS} characters, got {len(text)}",
            )
        text = clean_text(text)
        if not text:
            return
        turn = self._input_turn()
        if turn is None:
            turn = _Turn(next(self._numbers))
            if self._idle():
                if self._start(turn, text, now):
                    self._active = turn
                return
            self._queue.append(turn)
        if turn.cid is not None:
            self._session.text(turn.cid, text, now)
            return
        # Waiting behind the turn being spoken: bounded as the session bounds its buffer.
        if turn.waiting_chars + len(text) > self._max_buffered_chars:
            raise SessionError(
                "text_too_long",
                f"more than {self._max_buffered_chars} characters are waiting to be spoken; "
                "wait for Flushed before sending more",
                retryable=True,
            )
        turn.waiting.append(text)
        turn.waiting_chars += len(text)

    def _flush(self, now: float) -> Reply[WebSocketFrame] | None:
        while self._flushes and now - self._flushes[0] >= FLUSH_WINDOW_S:
            self._flushes.popleft()
        if len(self._flushes) >= FLUSH_LIMIT:
            # As Deepgram does: the Flush is not processed (its text stays buffered).
            message = (
                f"at most {FLUSH_LIMIT} Flush messages are processed every "
                f"{FLUSH_WINDOW_S:g} seconds; this one was not"
            )
            return Reply([dump(warning("FLUSH_LIMIT_EXCEEDED", message))])
        self._flushes.append(now)
        sequence_id = self._sequence()
        turn = self._input_turn()
        if turn is None:
            # Nothing unflushed: answered at once, after the audio already on its way.
            return self._answer(_Answer(_flushed(sequence_id), cleared=False))
        turn.ended = True
        turn.sequence_id = sequence_id
        if turn.cid is not None:
            self._session.end(turn.cid, now)
        return None

    def _clear(self, now: float) -> Reply[WebSocketFrame] | None:
        sequence_id = self._sequence()
        # Waiting turns are forgotten, and so are the Flushed of empty turns behind them; the
        # Cleared of earlier Clears still go out, in order.
        self._queue = deque(a for a in self._queue if isinstance(a, _Answer) and a.cleared)
        # The turns that ended stop playing at the client too (their audio may still be playing
        # while a later turn speaks).
        self._session.stop_hearing()
        active = self._active
        if active is None or active.cid is None or active.cleared is not None:
            return self._answer(_Answer(_cleared(sequence_id), cleared=True))
        active.ended = True
        active.cleared = sequence_id
        self._cancelled.add(active.cid)
        # Cleared follows the context's CancelledOut, after which no audio of it is sent.
        self._session.cancel(active.cid, None, now, now)
        return None

    def _close(self, now: float) -> Reply[WebSocketFrame] | None:
        self._closing = True
        turn = self._input_turn()
        if turn is not None:
            turn.ended = True  # spoken as a last turn, with no Flushed
            if turn.cid is not None:
                self._session.end(turn.cid, now)
        if self._idle():
            return Reply(close=Close(NORMAL_CLOSURE))
        return None

    def peer_gone(self) -> bool:
        return True  # the client left: nobody is listening to the rest

    def deadline(self) -> float | None:
        # Deepgram keeps an idle connection open (clients pool them), and an idle connection
        # here holds no stream slot: no inactivity timeout.
        return None

    def expire(self) -> None:
        return None

    def shutdown(self) -> Reply[WebSocketFrame]:
        """An ``Error`` message (``shutting_down``), then close 1012 (service restart)."""
        return self._error(ErrorOut(None, "shutting_down", SHUTTING_DOWN, retryable=True))

    # -- session events --------------------------------------------------------------------------

    def reply(self, event: ClientEvent) -> Reply[WebSocketFrame]:
        if isinstance(event, AudioOut):
            return Reply([event.data] if event.data else [])
        if isinstance(event, DoneOut | CancelledOut):
            return self._finished(event.context_id)
        if isinstance(event, ErrorOut):
            if event.code == "unknown_context" and event.context_id in self._cancelled:
                # A Clear raced the turn's end: it had finished (its DoneOut was on its way), so
                # there was nothing left to cancel. Its DoneOut answered the Clear.
                return Reply()
            return self._error(event)
        return Reply()  # word timings: Deepgram's streaming TTS has none

    def _finished(self, cid: str) -> Reply[WebSocketFrame]:
        active = self._active
        if active is None or active.cid != cid:
            log.error("end of context %r, which is not the turn being spoken", cid)
            return Reply()
        self._active = None
        frames: list[WebSocketFrame] = []
        if active.cleared is not None:
            frames.append(_cleared(active.cleared))
        elif active.sequence_id is not None:
            frames.append(_flushed(active.sequence_id))
        frames.extend(self._advance())
        done = self._closing and self._idle()
        return Reply(frames, Close(NORMAL_CLOSURE) if done else None)

    def _advance(self) -> list[WebSocketFrame]:
        """Start what waited for the turn that just ended; the answers due before it."""
        frames: list[WebSocketFrame] = []
        now = self._clock()
        while self._active is None and self._queue and not self._failed:
            item = self._queue.popleft()
            if isinstance(item, _Answer):
                frames.append(item.frame)
            elif item.waiting:
                if not self._start(item, "".join(item.waiting), now):
                    break
                item.waiting.clear()
                self._active = item
                if item.ended:
                    assert item.cid is not None  # _start opened it
                    self._session.end(item.cid, now)
            elif item.sequence_id is not None:
                frames.append(_flushed(item.sequence_id))
        return frames

    def _error(self, event: ErrorOut) -> Reply[WebSocketFrame]:
        error = socket_error(event.code, event.message)
        if error.close_code is None:
            return Reply([dump(error.frame)])
        self._failed = True
        return Reply([dump(error.frame)], Close(error.close_code, event.message))

    # -- internals -------------------------------------------------------------------------------

    def _input_turn(self) -> _Turn | None:
        """The turn new text joins, if one is still taking text."""
        last = self._queue[-1] if self._queue else self._active
        if isinstance(last, _Turn) and not last.ended:
            return last
        return None

    def _idle(self) -> bool:
        return self._active is None and not self._queue

    def _answer(self, answer: _Answer) -> Reply[WebSocketFrame] | None:
        """Send ``answer`` now if nothing is on its way, else after what is."""
        if self._idle():
            return Reply([answer.frame])
        self._queue.append(answer)
        return None

    def _sequence(self) -> int:
        sequence_id = self._next_sequence
        self._next_sequence += 1
        return sequence_id

    def _start(self, turn: _Turn, text: str, now: float) -> bool:
        """Open ``turn``'s context with its first text; False when the session refused it
        (the error is on its way and closes the connection)."""
        cid = f"turn-{turn.number}"
        start = StartOptions(
            voice=self._options.voice,
            output_format=self._options.output_format.name,
            settings=self._options.settings,
            language=self._options.language,
        )
        if not self._session.start(cid, start, now):
            self._failed = True
            return False
        turn.cid = cid
        self._session.text(cid, text, now)
        return True

    def _fail(self, error: SessionError) -> None:
        # In order behind the events already queued; the writer closes the socket on it.
        self._failed = True
        self._session.error(None, error.code, error.message, error.retryable)


def _flushed(sequence_id: int) -> str:
    return dump({"type": "Flushed", "sequence_id": sequence_id})


def _cleared(sequence_id: int) -> str:
    return dump({"type": "Cleared", "sequence_id": sequence_id})
