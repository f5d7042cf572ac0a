"""Which new streams the server admits: by what the speaking ones cost, or by a count.

A stream is one open session context, whatever the protocol: an HTTP request, a native or
ElevenLabs WebSocket context, a Wyoming request. Past the limit a new stream is refused at once,
with a hint of when to retry, so that the streams already admitted keep their latency and stay
gapless. Sessions ask when they open a context and give its ticket back when the context ends,
however it ends. Two limits, either or both:

* **by cost** (the default): a stream is counted at its engine's cost, the CPU time one
  second of its audio takes (``costs``, learnt by the scheduler: about 0.1 s for the bundled
  Piper voice, about ten times that for Kokoro), but only while it *speaks*: from its opening
  until its listener has heard everything it was given (``Ticket.busy_until``), even once its
  context has ended (``release(ticket, heard_until)``): its call is still speaking, and its
  next turn follows. An idle context (all said and heard, waiting for its next turn) costs
  nothing. For its first second a stream counts at what its first second of audio costs, if
  more (``start_costs``: its text stages and small first windows come first, and its listener
  plays that second as it comes), so that a burst of new calls is not admitted as if each
  were already under way. A new stream is admitted while the speaking streams' cost, its own
  included, stays within the capacity, in CPU seconds a second: learnt from the workers'
  slack as the server runs (``limit``, ``voxflow.session.load_limit``), or a fixed
  ``capacity``. A stream that is not paced (a whole-text HTTP or Wyoming request renders as
  fast as a worker can) counts as one worker's share of the capacity (``unpaced_share``)
  until it ends, then at its engine's cost while it is heard;
* **by count** (``max_streams``): at most that many open streams, a Piper one holding one slot,
  a Kokoro one ``slots``; one that needs more than the whole cap holds all of it.

With neither, every stream is admitted.

Pure: the time is passed in; everything runs on the event loop, so no lock is needed.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from voxflow.runtime.costs import PIPER_AUDIO_COST_S, START_AUDIO_S
from voxflow.runtime.slack import SlackStats
from voxflow.session.errors import SessionError
from voxflow.session.load_limit import LoadLimit

__all__ = ["Admission", "AdmissionSettings", "Refusal", "Ticket", "stream_slots"]

log = logging.getLogger(__name__)


def stream_slots(engine: str, kokoro_slots: int) -> int:
    """What a stream of ``engine`` holds of a count cap: a Kokoro one ``kokoro_slots``, any
    other one."""
    return kokoro_slots if engine == "kokoro" else 1


class Refusal(enum.Enum):
    SATURATED = "saturated"
    DRAINING = "draining"


@dataclass(frozen=True)
class AdmissionSettings:
    max_streams: int = 0  # open streams at most (0: no count)
    # CPU seconds a second the speaking streams may take, fixed (0: no limit, or a learnt one:
    # ``Admission(limit=...)``).
    capacity: float = 0.0
    retry_after_s: float = 1.0  # the hint a refused client gets
    # What a stream rendered as fast as a worker can counts for, as a share of the capacity:
    # one worker's (1 / workers), so that as many of them as there are workers fit when
    # nothing else speaks.
    unpaced_share: float = 1.0

    def __post_init__(self) -> None:
        if self.max_streams < 0 or self.capacity < 0 or not 0 < self.unpaced_share <= 1:
            raise ValueError("max_streams and capacity must be >= 0, 0 < unpaced_share <= 1")
        if self.retry_after_s <= 0:
            raise ValueError("retry_after_s must be > 0")


@dataclass(eq=False)
class Ticket:
    """An admitted stream. Its session keeps ``busy_until`` current: when the stream stops
    speaking (``math.inf`` while it has text to say or audio to render)."""

    engine: str
    slots: int
    paced: bool = True
    busy_until: float = field(default=math.inf)
    admitted_at: float = 0.0  # for its first second it counts at its start's cost


class Admission:
    def __init__(
        self,
        settings: AdmissionSettings,
        on_refused: Callable[[Refusal], None] = lambda _refusal: None,
        costs: Callable[[str], float] = lambda _engine: PIPER_AUDIO_COST_S,
        limit: LoadLimit | None = None,
        slack: Callable[[], SlackStats] = SlackStats,
        start_costs: Callable[[str], float] | None = None,
    ) -> None:
        """``costs``: an engine's CPU seconds per second of audio (the scheduler's
        ``audio_cost``); ``start_costs``: the CPU seconds a stream's first second of audio
        takes (the scheduler's ``start_cost``; None: no more than the later ones).
        ``limit``: the capacity is learnt (``voxflow.session.load_limit``) from ``slack``,
        the workers' slack so far (the scheduler's ``slack``), and ``settings.capacity`` is
        not used."""
        self._settings = settings
        self._costs = costs
        self._limit = limit
        self._slack = slack
        self._start_costs = start_costs
        self._on_refused = on_refused
        self._tickets: set[Ticket] = set()
        self._heard: list[Ticket] = []  # released, but still heard (counted until busy_until)
        self._slots = 0
        self._draining = False

    @property
    def active(self) -> int:
        """Streams admitted and not released (slots, when the limit counts them)."""
        return self._slots if self._settings.max_streams else len(self._tickets)

    @property
    def limit(self) -> int:
        """How many Piper streams may be open at once: the count cap, or how many could speak
        at once within the capacity, whichever is less (0: no limit)."""
        limits = []
        if self._settings.max_streams:
            limits.append(self._settings.max_streams)
        if self.capacity:
            # The tolerance _room admits with: 0.85 x 2 / 0.1 is 16.99... in floating point.
            fit = math.floor(self.capacity / self._costs("piper") + 1e-9)
            limits.append(max(1, fit))
        return min(limits, default=0)

    @property
    def capacity(self) -> float:
        """CPU seconds a second the speaking streams may take (0: no limit): learnt, with a
        ``limit``."""
        return self._settings.capacity if self._limit is None else self._limit.capacity

    @property
    def load_limit(self) -> LoadLimit | None:
        """The learnt capacity (None: a fixed one, or none)."""
        return self._limit

    @property
    def tick_s(self) -> float:
        """How often ``learn`` should be called (a learnt capacity's interval)."""
        return 1.0 if self._limit is None else self._limit.settings.interval_s

    def learn(self, now: float) -> None:
        """Let the learnt capacity decide on the interval that ended, if one has: at every
        admission and readiness check, and on the server's tick (every ``tick_s``), so that
        it also moves while nothing is admitted."""
        limit = self._limit
        if limit is not None and limit.due(now):
            limit.update(now, self._slack(), self.load(now))

    @property
    def draining(self) -> bool:
        return self._draining

    def load(self, now: float) -> float:
        """CPU seconds a second the streams speaking at ``now`` take."""
        self._heard = [t for t in self._heard if t.busy_until > now]
        speaking = sum(self._speaking_cost(t, now) for t in self._tickets if t.busy_until > now)
        # Ended, all rendered: heard at its engine's pace however fast it was rendered.
        return speaking + sum(self._costs(t.engine) for t in self._heard)

    def saturated(self, now: float) -> bool:
        """Whether a new Piper stream would be refused at ``now``."""
        self.learn(now)
        return not self._room("piper", 1, True, now)

    def fits(self, engine: str, slots: int, now: float, paced: bool = True) -> bool:
        """Whether a stream of ``engine`` would be admitted now (asks, takes nothing)."""
        return not self._draining and self._room(engine, slots, paced, now)

    def acquire(self, engine: str, slots: int, now: float, paced: bool = True) -> Ticket:
        """Admit a new stream of ``engine`` (``slots``: what it holds of a count cap), or raise
        the ``SessionError`` that refuses it."""
        if self._draining:
            self._on_refused(Refusal.DRAINING)
            # The hint a balancer's client needs as much as a full server's (Retry-After).
            raise SessionError(
                "shutting_down",
                "the server is shutting down; try another one",
                retry_after_ms=1000.0 * self._settings.retry_after_s,
            )
        self.learn(now)
        if not self._room(engine, slots, paced, now):
            self._on_refused(Refusal.SATURATED)
            if self._limit is not None and not self._over_count(slots):
                self._limit.refused(self._cost(engine, paced))
            s = self._settings
            what = (
                f"its limit of {s.max_streams} active streams"
                if self._over_count(slots)
                else "the limit of what its workers can speak without gaps"
            )
            raise SessionError(
                "concurrency_limited",
                f"the server is at {what}; retry in {s.retry_after_s:g} s",
                retry_after_ms=1000.0 * s.retry_after_s,
            )
        ticket = Ticket(engine, self._held(slots), paced, admitted_at=now)
        self._tickets.add(ticket)
        self._slots += ticket.slots
        if self._limit is not None:
            self._limit.admitted(self._cost(engine, paced), self.load(now))
        return ticket

    def release(self, ticket: Ticket, heard_until: float | None = None) -> None:
        """Give back the ticket of a stream that ended: at once, or, with ``heard_until``
        (when its listener will have heard the last of it), its cost counts until then."""
        if ticket not in self._tickets:
            # A release without its acquire would let one stream too many in, forever.
            log.error("admission ticket released twice")
            return
        self._tickets.remove(ticket)
        self._slots -= ticket.slots
        if heard_until is not None and self.capacity:
            ticket.busy_until = heard_until
            self._heard.append(ticket)

    def not_heard(self, ticket: Ticket) -> None:
        """The listener of a released ``ticket`` stopped before its end (a barge-in after the
        stream ended): it costs nothing any more."""
        if ticket in self._heard:
            self._heard.remove(ticket)

    def drain(self) -> None:
        """Admit nothing more (shutting down); streams already admitted go on."""
        self._draining = True

    def _held(self, slots: int) -> int:
        if not self._settings.max_streams:
            return 0
        return max(1, min(slots, self._settings.max_streams))

    def _cost(self, engine: str, paced: bool, starting: bool = False) -> float:
        """What a stream counts for: a paced one its engine's cost, or while it starts (its
        first second) what its first second of audio costs, if more: its text stages and
        small first windows come first, and its listener plays that second as it comes; an
        unpaced one a worker's share."""
        if not paced:
            return self._settings.unpaced_share * self.capacity
        cost = self._costs(engine)
        if starting and self._start_costs is not None:
            cost = max(cost, self._start_costs(engine) / START_AUDIO_S)
        return cost

    def _speaking_cost(self, ticket: Ticket, now: float) -> float:
        starting = now - ticket.admitted_at < START_AUDIO_S
        return self._cost(ticket.engine, ticket.paced, starting)

    def _over_count(self, slots: int) -> bool:
        s = self._settings
        return bool(s.max_streams) and self._slots + self._held(slots) > s.max_streams

    def _room(self, engine: str, slots: int, paced: bool, now: float) -> bool:
        if self._over_count(slots):
            return False
        capacity = self.capacity
        if not capacity:
            return True
        cost = self._cost(engine, paced, starting=True)
        load = self.load(now)
        # A stream dearer than the whole capacity runs when nothing else speaks.
        return load + cost <= capacity + 1e-9 or load == 0.0
