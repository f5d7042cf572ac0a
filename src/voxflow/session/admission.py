"""The server-wide cap on active streams, and the switch that stops admitting when draining.

A stream is one open session context, whatever the protocol: an HTTP request, a native or
ElevenLabs WebSocket context, a Wyoming request (as hosted TTS services count concurrency). The
cap is what the machine sustains in real time: past it, a new stream would make every admitted
stream late, so it is refused at once with a hint of when to retry, and the streams already
admitted keep their latency. Sessions ask when they open a context and give the slot back when
the context ends, however it ends.

The cap counts slots: a stream of the Piper engine holds one, a Kokoro stream several
(``kokoro_stream_slots``), since it costs that much more of the machine to keep in real time. A
stream that needs more slots than the whole cap holds the whole cap, so it runs when nothing else
does.

Everything runs on the event loop; no lock is needed.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass

from voxflow.session.errors import SessionError

__all__ = ["Admission", "AdmissionSettings", "Refusal"]

log = logging.getLogger(__name__)


class Refusal(enum.Enum):
    SATURATED = "saturated"
    DRAINING = "draining"


@dataclass(frozen=True)
class AdmissionSettings:
    max_streams: int
    retry_after_s: float = 1.0  # the hint a refused client gets

    def __post_init__(self) -> None:
        if self.max_streams < 1:
            raise ValueError("max_streams must be >= 1")
        if self.retry_after_s <= 0:
            raise ValueError("retry_after_s must be > 0")


class Admission:
    def __init__(
        self,
        settings: AdmissionSettings,
        on_refused: Callable[[Refusal], None] = lambda _refusal: None,
    ) -> None:
        self._settings = settings
        self._on_refused = on_refused
        self._active = 0
        self._draining = False

    @property
    def active(self) -> int:
        return self._active

    @property
    def limit(self) -> int:
        return self._settings.max_streams

    @property
    def saturated(self) -> bool:
        return self._active >= self._settings.max_streams

    @property
    def draining(self) -> bool:
        return self._draining

    def fits(self, slots: int) -> bool:
        """Whether a stream of ``slots`` would be admitted now (asks, takes nothing)."""
        slots = max(1, min(slots, self._settings.max_streams))
        return not self._draining and self._active + slots <= self._settings.max_streams

    def acquire(self, slots: int = 1) -> int:
        """Take ``slots`` for a new stream (at most the whole cap), or raise the
        ``SessionError`` that refuses it; returns the slots taken, for ``release``."""
        if self._draining:
            self._on_refused(Refusal.DRAINING)
            raise SessionError("shutting_down", "the server is shutting down; try another one")
        slots = max(1, min(slots, self._settings.max_streams))
        if self._active + slots > self._settings.max_streams:
            self._on_refused(Refusal.SATURATED)
            raise SessionError(
                "concurrency_limited",
                f"the server is at its limit of {self._settings.max_streams} active streams; "
                f"retry in {self._settings.retry_after_s:g} s",
                retry_after_ms=1000.0 * self._settings.retry_after_s,
            )
        self._active += slots
        return slots

    def release(self, slots: int = 1) -> None:
        """Give back the slots of a stream that ended (what its ``acquire`` returned)."""
        if self._active < slots:
            # A release without its acquire would let one stream too many in, forever.
            log.error("admission slot released twice")
            self._active = 0
            return
        self._active -= slots

    def drain(self) -> None:
        """Admit nothing more (shutting down); streams already admitted go on."""
        self._draining = True
