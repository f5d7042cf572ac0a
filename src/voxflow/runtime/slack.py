"""How much slack the workers leave against the listeners' playback clocks: the signal that
admission learns its limit from (``voxflow.session.load_limit``).

A job of a paced stream with audio in hand has a deadline: the latest moment it may start for
its audio to arrive before the listener runs out (or before the stream has been quiet for
``max_quiet_s``). It becomes *ready* when it is released and its lane can run it; from then on
it may only wait for a worker. Its *allowance* is its deadline less its ready time, its *wait*
the time from ready to a worker taking it, and its *pressure* the wait over the allowance:

* 0: a worker took it at once (the machine had a core to spare);
* 1: it started at its deadline (earliest-deadline-first serves everything just in time at
  saturation: the machine is at its limit);
* over 1: it started late; its listener may run dry.

So pressure is the share of its service-level margin a job spent in the queue, whatever the
CPU, the neighbours or the traffic: a quantity with the same meaning on any machine, which
is why admission's thresholds can be fractions of it.

Left out: a stream's first-audio jobs (their deadline is a latency target, not a run-dry, and
the first-audio worker serves them beside the others), unpaced streams (they render as fast as
a worker can, by design behind everything due), and phrase cache hits served without a worker.
A job whose deadline had already passed when it became ready (its text came after its
listener's audio had nearly run out: the text's lateness, not the machine's) is counted apart
(``text_late``). A window that finishes after its listener ran out, for a job that had an
allowance when ready, is a *miss*: the strongest sign the machine is past its limit.

Counters only grow; a reader takes a snapshot and subtracts an earlier one for an interval
(``SlackStats.since``), as Prometheus does. Pure: the policy updates it under the scheduler's
lock, the time passed in.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["PRESSURE_BOUNDS", "SlackMeter", "SlackStats", "jobs_over", "pressure_quantile"]

# Upper bounds of the pressure histogram's buckets (a last one above them holds the rest): fine
# up to 1 (served by the deadline), where admission's decisions are made, coarse beyond.
PRESSURE_BOUNDS: tuple[float, ...] = (
    *(round(0.05 * n, 2) for n in range(1, 21)),
    1.25,
    1.5,
    2.0,
    3.0,
)


@dataclass(frozen=True)
class SlackStats:
    """Counts since the meter began (or over an interval, ``since``)."""

    jobs: int = 0  # jobs with an allowance, taken by a worker
    buckets: tuple[int, ...] = field(default=(0,) * (len(PRESSURE_BOUNDS) + 1))
    pressure_sum: float = 0.0
    wait_s: float = 0.0  # their waits, summed
    misses: int = 0  # windows of such jobs that finished after their listener ran out
    text_late: int = 0  # jobs whose deadline had passed when they became ready
    first_audios: int = 0  # of ``jobs``, streams' first audios (``SlackMeter.first_audio``)
    # Not a count: jobs waiting past their deadline when the snapshot was taken, which the
    # counts above see only once a worker takes them (``since`` keeps the later one's).
    overdue: int = 0

    def since(self, earlier: SlackStats) -> SlackStats:
        """What happened after ``earlier`` (a snapshot of the same meter)."""
        return SlackStats(
            self.jobs - earlier.jobs,
            tuple(a - b for a, b in zip(self.buckets, earlier.buckets, strict=True)),
            self.pressure_sum - earlier.pressure_sum,
            self.wait_s - earlier.wait_s,
            self.misses - earlier.misses,
            self.text_late - earlier.text_late,
            self.first_audios - earlier.first_audios,
            self.overdue,
        )

    def quantile(self, q: float) -> float:
        """The pressure that a share ``q`` of the jobs stayed within (``pressure_quantile``)."""
        return pressure_quantile(self.buckets, q)


def pressure_quantile(buckets: Sequence[float], q: float) -> float:
    """The pressure that a share ``q`` of the jobs counted in ``buckets`` (one count per
    bucket of ``PRESSURE_BOUNDS``, and one past them; counts may be weighted) stayed within:
    the upper bound of the bucket that holds it (``math.inf`` past the last bound; 0 with no
    job)."""
    total = sum(buckets)
    if total <= 0:
        return 0.0
    rank = q * total
    seen = 0.0
    for bound, count in zip((*PRESSURE_BOUNDS, math.inf), buckets, strict=True):
        seen += count
        if seen >= rank - 1e-9 and count > 0:
            return bound
    return math.inf


def jobs_over(buckets: Sequence[float], pressure: float) -> float:
    """How many of the jobs counted in ``buckets`` (as for ``pressure_quantile``) waited more
    than ``pressure``, at the histogram's resolution: the buckets above the first bound at or
    past it."""
    return sum(buckets[bisect.bisect_right(PRESSURE_BOUNDS, pressure) :])


class SlackMeter:
    """See the module docstring."""

    def __init__(self) -> None:
        self._jobs = 0
        self._buckets = [0] * (len(PRESSURE_BOUNDS) + 1)
        self._pressure_sum = 0.0
        self._wait_s = 0.0
        self._misses = 0
        self._text_late = 0
        self._first_audios = 0

    def taken(self, ready: float, deadline: float, now: float) -> float | None:
        """A worker took at ``now`` a job that was ready at ``ready`` and due at ``deadline``:
        its pressure, or None when it had no allowance (counted in ``text_late``)."""
        allowance = deadline - ready
        if allowance <= 0:
            self._text_late += 1
            return None
        wait = max(0.0, now - ready)
        pressure = wait / allowance
        self._jobs += 1
        self._buckets[bisect.bisect_left(PRESSURE_BOUNDS, pressure)] += 1
        self._pressure_sum += pressure
        self._wait_s += wait
        return pressure

    def first_audio(self, waited_s: float, allowance_s: float) -> float:
        """A stream's first audio came ``waited_s`` later than its jobs' own CPU time would
        have brought it (it waited for a worker, or for its share of a core), with
        ``allowance_s`` to wait (the scheduler's ``first_audio_s``): counted as a job of that
        pressure. Returns it."""
        pressure = max(0.0, waited_s) / allowance_s
        self._jobs += 1
        self._first_audios += 1
        self._buckets[bisect.bisect_left(PRESSURE_BOUNDS, pressure)] += 1
        self._pressure_sum += pressure
        self._wait_s += max(0.0, waited_s)
        return pressure

    def missed(self) -> None:
        """A window of a job that had an allowance finished after its listener ran out."""
        self._misses += 1

    def snapshot(self, overdue: int = 0) -> SlackStats:
        """The counts so far; ``overdue``: jobs waiting past their deadline now."""
        return SlackStats(
            self._jobs,
            tuple(self._buckets),
            self._pressure_sum,
            self._wait_s,
            self._misses,
            self._text_late,
            self._first_audios,
            overdue,
        )
