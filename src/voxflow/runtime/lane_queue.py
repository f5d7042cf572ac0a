"""The scheduler's lanes waiting for a worker: by release time until released, then by deadline.

A lane is queued with its stream's version of it. Requeueing a lane moves the version on, and a
cancelled stream's lanes are dead, so an entry that no longer matches is *stale*: skipped when it
comes up, never searched for. Requeueing stays O(log n) and cancelling O(1); the heaps are
rebuilt only when stale entries dominate them (``compact``).

No lock of its own: the scheduler calls it under its lock.
"""

from __future__ import annotations

import heapq
import itertools

from voxflow.runtime.stream import StreamState
from voxflow.runtime.work import Lane, Work

__all__ = ["LaneQueue"]

# Rebuild a heap once it holds more than this many entries and four times as many as live streams.
_COMPACT_OVER = 64


class LaneQueue:
    """Queued lanes; the one due first comes out first."""

    def __init__(self) -> None:
        # (deadline, order, stream, lane, version); order keeps equal deadlines first in, first out.
        self._ready: list[tuple[float, int, StreamState, Lane, int]] = []
        # (release, deadline, order, stream, lane, version)
        self._sleeping: list[tuple[float, float, int, StreamState, Lane, int]] = []
        self._order = itertools.count()

    @staticmethod
    def _live(stream: StreamState, lane: Lane, version: int) -> bool:
        return not stream.cancelled and stream.versions[lane] == version

    def push(
        self, stream: StreamState, lane: Lane, release: float, deadline: float, now: float
    ) -> None:
        """Queue ``lane`` at its stream's current version: ready at once when ``release`` has
        come, else asleep until it does."""
        version, order = stream.versions[lane], next(self._order)
        if release > now:
            heapq.heappush(self._sleeping, (release, deadline, order, stream, lane, version))
        else:
            heapq.heappush(self._ready, (deadline, order, stream, lane, version))

    def pop(self, now: float) -> tuple[StreamState, Lane, Work] | None:
        """The released lane with the earliest deadline that has work to run, and its work
        (None: none has)."""
        while self._sleeping and self._sleeping[0][0] <= now:
            _, deadline, order, stream, lane, version = heapq.heappop(self._sleeping)
            heapq.heappush(self._ready, (deadline, order, stream, lane, version))
        while self._ready:
            _, _, stream, lane, version = heapq.heappop(self._ready)
            if not self._live(stream, lane, version):
                continue
            work = stream.runnable(lane)
            if work is not None:
                return stream, lane, work
        return None

    def next_release_s(self, now: float) -> float | None:
        """Seconds until the next sleeping lane is released (None: none sleeps)."""
        return self._sleeping[0][0] - now if self._sleeping else None

    def any_ready(self) -> bool:
        """Whether a released lane has work waiting."""
        return any(
            self._live(stream, lane, version) and stream.runnable(lane) is not None
            for _, _, stream, lane, version in self._ready
        )

    def overdue(self, now: float) -> int:
        """How many released lanes of paced streams with audio in hand wait past their
        deadline (what ``voxflow.runtime.slack`` counts only once a worker takes them)."""
        entries = [(d, s, ln, v) for d, _, s, ln, v in self._ready]
        entries += [(d, s, ln, v) for r, d, _, s, ln, v in self._sleeping if r <= now]
        return sum(
            1
            for deadline, stream, lane, version in entries
            if deadline < now
            and self._live(stream, lane, version)
            and stream.paced
            and not stream.fresh(now)
            and stream.runnable(lane) is not None
        )

    def ready_streams(self) -> int:
        """How many streams have a live lane released."""
        return len({id(e[2]) for e in self._ready if self._live(e[2], e[3], e[4])})

    def compact(self, live_streams: int) -> None:
        """Drop cancelled streams' entries from a heap they dominate."""
        limit = max(_COMPACT_OVER, 4 * live_streams)
        if len(self._ready) > limit:
            self._ready = [e for e in self._ready if not e[2].cancelled]
            heapq.heapify(self._ready)
        if len(self._sleeping) > limit:
            self._sleeping = [e for e in self._sleeping if not e[3].cancelled]
            heapq.heapify(self._sleeping)
