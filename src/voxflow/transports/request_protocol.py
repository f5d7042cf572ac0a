"""One HTTP request's answer, without I/O: a one-context request's session events in, the parts
of its HTTP response out (a ``Head``, then body bytes). ``transports.http_response`` sends them.

A request's text, options and context are all given before the response starts; the client sends
nothing more. Subclasses say what the body is made of (raw audio, SSE events, JSON lines, one
JSON object), and this base class decides when the response starts and how it ends:

* the head (status 200) goes out with the first body part, or at ``done`` if there is none;
* ``done``: the body's last parts, and the response ends normally;
* an error before the head was sent: the protocol's error object, with its HTTP status, as the
  whole response;
* an error after the head was sent cannot change the status: the body ends without its proper end
  (``TRUNCATE``: no final chunk), so the client sees a failed transfer, never a short file that
  looks whole. The same for a client that stops reading (``stall_close``) and a server bug.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from voxflow.connection.wire import Close, Reply
from voxflow.session.errors import SHUTTING_DOWN
from voxflow.session.events import AudioOut, ClientEvent, DoneOut, ErrorOut, TimestampsOut
from voxflow.transports.close_codes import INTERNAL_ERROR, NORMAL_CLOSURE, STALL_CLOSE
from voxflow.transports.json_body import dump

__all__ = [
    "COMPLETE",
    "NO_STORE",
    "STALLED",
    "TRUNCATE",
    "ErrorAnswer",
    "Head",
    "HttpPart",
    "RequestProtocol",
]

# The runner's closes, as HTTP reads them: only COMPLETE ends the body properly.
COMPLETE = Close(NORMAL_CLOSURE, "complete")
TRUNCATE = Close(INTERNAL_ERROR, "truncated")
STALLED = STALL_CLOSE
NO_STORE: tuple[tuple[str, str], ...] = (("cache-control", "no-store"),)


@dataclass(frozen=True)
class Head:
    """The status line and headers of a response."""

    status: int
    media_type: str
    headers: tuple[tuple[str, str], ...] = NO_STORE


HttpPart = Head | bytes


@dataclass(frozen=True)
class ErrorAnswer:
    """A refused request in the protocol's shape: a JSON body and its HTTP status."""

    status: int
    body: bytes

    @classmethod
    def json(cls, status: int, body: dict[str, Any]) -> ErrorAnswer:
        return cls(status, dump(body).encode())


class RequestProtocol(abc.ABC):
    """The answer to one request; see the module docstring."""

    def __init__(self, media_type: str) -> None:
        self.media_type = media_type  # of the body, when the request succeeds
        self._started = False  # the head was sent (the protocol's own state, not the session's)

    # -- what a subclass writes ----------------------------------------------------------------

    def audio(self, event: AudioOut) -> Sequence[bytes]:
        """The body parts for one piece of audio (by default the encoded audio itself)."""
        return (event.data,)

    def timestamps(self, event: TimestampsOut) -> Sequence[bytes]:
        """The body parts for word timings (none, unless the body carries them)."""
        return ()

    def done(self, event: DoneOut) -> Sequence[bytes]:
        """The body's last parts."""
        return ()

    @abc.abstractmethod
    def error(self, code: str, message: str) -> ErrorAnswer:
        """A refusal in the protocol's error shape (the response has not started)."""

    # -- the runner's side (WireProtocol) ------------------------------------------------------

    def receive(self, frame: bytes) -> None:
        """Nothing arrives after the request body; the adapter never calls this."""
        return None

    def reply(self, event: ClientEvent) -> Reply[HttpPart]:
        if isinstance(event, AudioOut):
            return self._body(self.audio(event))
        if isinstance(event, TimestampsOut):
            return self._body(self.timestamps(event))
        if isinstance(event, DoneOut):
            return self._body(self.done(event), COMPLETE)
        if isinstance(event, ErrorOut):
            if self._started:
                return Reply(close=TRUNCATE)
            self._started = True
            answer = self.error(event.code, event.message)
            headers: tuple[tuple[str, str], ...] = NO_STORE
            if event.retry_after_ms is not None:  # a full server: when to come back
                retry_after = max(1, math.ceil(event.retry_after_ms / 1000.0))
                headers += (("retry-after", str(retry_after)),)
            head = Head(answer.status, "application/json", headers)
            return Reply((head, answer.body), COMPLETE)
        return Reply()  # cancels and closes do not happen to a request

    def shutdown(self) -> Reply[HttpPart]:
        """Past the drain time: a request not yet answered is refused (503, retryable); an answer
        under way is cut, so the client knows its file is short."""
        return self.reply(ErrorOut(None, "shutting_down", SHUTTING_DOWN, retryable=True))

    def peer_gone(self) -> bool:
        return True  # the client left: nobody is waiting for the rest

    def deadline(self) -> float | None:
        return None

    def expire(self) -> None:
        return None

    @property
    def stall_close(self) -> Close:
        return STALLED

    @property
    def failure_close(self) -> Close:
        return TRUNCATE

    def _body(self, parts: Sequence[bytes], close: Close | None = None) -> Reply[HttpPart]:
        frames: list[HttpPart] = [part for part in parts if part]
        if not self._started and (frames or close is not None):
            self._started = True
            frames.insert(0, Head(200, self.media_type))
        return Reply(frames, close)
