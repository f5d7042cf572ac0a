"""The context table of a message protocol with named contexts (ElevenLabs' multi-stream
WebSocket, Cartesia's WebSocket), without I/O.

Two views of the same contexts are kept, because the reader and the writer of a connection see
them at different times:

* the open contexts, by id (the reader's view): what a client message may name now;
* the contexts whose terminal event the writer has not handled yet, oldest first per id (the
  writer's view): a context closed or cancelled by the reader may be reopened under the same id
  before its last event goes out, and that event belongs to the old one.

The table also reads what such a protocol's client messages share: a JSON text frame (a binary one
is refused), its ``context_id``, and the connection's inactivity deadline (no message and no audio
for the protocol's timeout).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from voxflow.session.errors import SessionError
from voxflow.session.options import check_name
from voxflow.transports.json_body import decode_object

__all__ = ["DEFAULT_CONTEXT", "ContextTable"]

DEFAULT_CONTEXT = "default"  # a message without a context_id

C = TypeVar("C")


class ContextTable(Generic[C]):
    """One connection's contexts (see the module docstring)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._open: dict[str, C] = {}
        self._in_flight: dict[str, deque[C]] = {}
        self.last_activity = clock()

    # -- client messages -------------------------------------------------------------------------

    def message(self, frame: str | bytes) -> dict[str, Any]:
        """A client frame as its JSON object; ``SessionError`` for a binary frame or one that
        is not a JSON object."""
        if isinstance(frame, bytes):
            raise SessionError("invalid_message", "binary frames are not accepted")
        return decode_object(frame)

    @staticmethod
    def context_id(message: dict[str, Any]) -> str:
        """The context a message names (``DEFAULT_CONTEXT`` when it names none)."""
        cid = message.get("context_id")
        if cid is None:
            return DEFAULT_CONTEXT
        if not isinstance(cid, str) or not cid:
            raise SessionError("invalid_message", "context_id must be a non-empty string")
        # Echoed in every message of the context: short and printable, or refused.
        return check_name(cid, "context_id", "invalid_message")

    # -- inactivity ------------------------------------------------------------------------------

    def touch(self) -> None:
        """A client message arrived or audio went out: the inactivity timer starts again."""
        self.last_activity = self._clock()

    def inactive_at(self, timeout_s: float) -> float:
        """When the connection has been inactive for ``timeout_s``."""
        return self.last_activity + timeout_s

    # -- the reader's view -----------------------------------------------------------------------

    def get(self, cid: str) -> C | None:
        """The open context ``cid``, if any."""
        return self._open.get(cid)

    def opened(self, cid: str, context: C) -> None:
        """``context`` was opened as ``cid``: open now, and in flight until its last event."""
        self._open[cid] = context
        self._in_flight.setdefault(cid, deque()).append(context)

    def close(self, cid: str) -> C | None:
        """Take ``cid`` out of the open contexts (its last event is still to come)."""
        return self._open.pop(cid, None)

    def open_items(self) -> list[tuple[str, C]]:
        """The open contexts, by id (a copy: the caller may close them as it goes)."""
        return list(self._open.items())

    def __iter__(self) -> Iterator[C]:
        """The open contexts."""
        return iter(list(self._open.values()))

    # -- the writer's view -----------------------------------------------------------------------

    def current(self, cid: str) -> C | None:
        """The context that an event of ``cid`` belongs to (the oldest in flight)."""
        queue = self._in_flight.get(cid)
        return queue[0] if queue else None

    def finish(self, cid: str) -> C | None:
        """The context that a terminal event of ``cid`` ends: no longer in flight, nor open."""
        queue = self._in_flight.get(cid)
        context = queue.popleft() if queue else None
        if queue is not None and not queue:
            del self._in_flight[cid]
        if context is not None and self._open.get(cid) is context:
            del self._open[cid]
        return context

    def in_flight(self) -> bool:
        """Some context's terminal event is still to come."""
        return bool(self._in_flight)
