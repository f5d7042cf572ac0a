"""What a connection reports of its streams, for whoever keeps the server's metrics.

The driver calls these as its streams open and end, as audio goes out and as cancels are
answered; the server's ``ServerMetrics`` implements them with Prometheus instruments. Defined
here, below the server, so that the connection machinery names no server type.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["StreamMetrics"]


class StreamMetrics(Protocol):
    def observe_stream_opened(self, protocol: str, output_format: str, voice: str) -> None:
        """A context's stream started synthesis (``protocol`` names the connection's API)."""

    def observe_stream_ended(self) -> None:
        """A stream drained or was cancelled."""

    def observe_chunk_gap(self, gap_s: float) -> None:
        """Time between two audio chunks of one context, as they were queued to the client."""

    def observe_quiet(self, quiet_s: float) -> None:
        """How long a context sent no audio, while it owed some, before a chunk
        (``AudioOut.quiet_s``)."""

    def observe_first_audio(self, protocol: str, ttfa_s: float, cached: bool | None) -> None:
        """A context's time to first audio; ``cached``: its first segment was a phrase cache hit
        (True), a miss (False), or there is no cache (None)."""

    def observe_cancel(self, latency_s: float) -> None:
        """A cancel was answered ``latency_s`` after it was asked for."""
