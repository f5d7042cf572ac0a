"""The wire types that a connection's protocol, its transport and the runner share, without I/O.

A transport (``voxflow.transports``) implements ``WireProtocol`` and builds a ``Transport``; the
runner (``voxflow.connection.runner``) drives both. Nothing here does I/O or imports asyncio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from voxflow.session.events import ClientEvent

__all__ = ["Close", "PeerGone", "Reply", "Transport", "WireProtocol"]

FrameIn = TypeVar("FrameIn")
FrameOut = TypeVar("FrameOut")
_In_contra = TypeVar("_In_contra", contravariant=True)
_Out_co = TypeVar("_Out_co", covariant=True)


class PeerGone(Exception):
    """The peer closed or reset the connection while a frame was being sent."""


@dataclass(frozen=True)
class Close:
    """How to close a connection: a WebSocket close code and reason (TCP ignores both)."""

    code: int
    reason: str = ""


@dataclass(frozen=True)
class Reply(Generic[_Out_co]):
    """Frames to send for one session event, then the close to do, if any."""

    frames: Sequence[_Out_co] = ()
    close: Close | None = None


class WireProtocol(Protocol[_In_contra, _Out_co]):
    """One connection's protocol state, without I/O."""

    def receive(self, frame: _In_contra) -> Reply[_Out_co] | None:
        """Apply one client frame (bad frames become error events, in order). A protocol that
        answers a frame by itself, with no session event to wait for, returns the answer: the
        reader sends it, never in the middle of another reply."""

    def reply(self, event: ClientEvent) -> Reply[_Out_co]:
        """The frames for one session event, in the protocol's wire shape."""

    def peer_gone(self) -> bool:
        """The peer sent its last frame; True ends the connection now, False when an answer is
        still owed (the writer goes on until a reply closes the connection)."""

    def deadline(self) -> float | None:
        """When ``expire`` is due on the driver's clock (an inactivity timeout), or None."""

    def expire(self) -> None:
        """The deadline passed."""

    def shutdown(self) -> Reply[_Out_co]:
        """The server is shutting down and the drain time is over: the protocol's last words
        (an error frame, a close code) for a connection that is still open."""

    @property
    def stall_close(self) -> Close:
        """The close for a client that stopped reading."""

    @property
    def failure_close(self) -> Close:
        """The close after a failure inside the server (a bug, logged)."""


@dataclass(frozen=True)
class Transport(Generic[FrameIn, FrameOut]):
    """The I/O of one connection. ``receive`` returns None once the peer is gone; ``send``
    raises ``PeerGone`` when it is."""

    receive: Callable[[], Awaitable[FrameIn | None]]
    send: Callable[[FrameOut], Awaitable[None]]
    close: Callable[[Close], Awaitable[None]]
    # Drops the connection at once, unsent bytes and all: called when a close outlasts its
    # bound (a client that reads nothing never takes the close frame). None: no way to.
    abort: Callable[[], None] | None = None
