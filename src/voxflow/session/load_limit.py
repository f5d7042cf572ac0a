"""The admitted capacity, learnt from the workers' slack as the server runs.

Admission (``voxflow.session.admission``) admits a new stream while the speaking streams' cost
stays within a capacity, in CPU seconds a second. How much keeps every call gapless is not a
constant: it depends on the CPU, the neighbours and the traffic. So the capacity is learnt,
the way adaptive concurrency limits learn theirs from latency (TCP Vegas, Netflix's
concurrency-limits): from the *pressure* of the scheduler's jobs (``voxflow.runtime.slack``),
the share of its margin a job spent waiting (0: served at once; 1: at its deadline).

Every ``interval_s``, once the interval has seen ``min_jobs`` jobs (or ``max_window_s`` has
passed), it takes the ``quantile`` of pressure over the recent jobs (older intervals fade
with ``memory_s``, so that one interval's handful of jobs does not decide alone), or of the
interval alone with the jobs waiting past their deadline now, if that is higher (a sudden
change is not diluted by what came before it). That puts the machine in one of three bands:

* **the slack holds** (at most ``low``): the capacity grows, if it is *in use*: a stream was
  refused, or the load reached ``in_use`` of it (a Vegas limit does not drift up while the
  traffic does not use it). By one stream (the dearest one admitted or refused), more the
  less the jobs waited (up to half the capacity when none waited: Vegas grows faster while
  nothing queues), and after a cut at least half the way back to where it was cut from (the
  *recovery*: a capacity cut by a burst comes back within a few intervals);
* **the slack is spent** (over ``high``, by more late jobs than chance explains: a machine
  within its limit shows more than one late job in twenty in a small sample now and then, so
  the late share of the recent jobs, or of the interval alone, must pass a one-sided binomial
  test at ``significance`` against the ``1 - quantile`` allowed): it is cut, by the ratio of
  ``high`` to the pressure (a gradient, as Gradient2Limit's), between ``max_cut`` and
  ``min_cut``, from the load if that is lower (the machine could not carry what it carried),
  and what was seen is forgotten (the next decision judges what follows the cut). At most
  once per interval, and not again while the load is over the capacity after a cut:
  admission never stops a stream it admitted, so until the load has come down a further cut
  would refuse nothing more; it would only pile up. Recovery aims at three quarters or more
  of where it was cut from (CUBIC's fast convergence: a cause that stays, a slower CPU, does
  not draw it back to the old capacity);
* **between the two**, or late jobs that chance explains: it holds. The band keeps it from
  oscillating.

A capacity the traffic does not use (the load stays under ``in_use`` of it, nothing refused)
is not validated: the calls that proved it are gone. It is kept for ``hold_s`` (RFC 7661's
non-validated period: a lull between calls says nothing about the machine, and calls coming
back must not be refused for it), then falls back towards its start, or twice the load if
that is more, fading with ``memory_s``, so that calls after a long quiet spell do not meet a
capacity learnt on a machine that may have changed since (a neighbour moved in). The next
cut, if the machine did change, comes within an interval or two of the calls' return.

The thresholds are fractions of the service level, not figures of a corpus: a job at pressure
1 started at its deadline, so ``high`` = 1 says "more than one job in twenty (``quantile``
0.95) started later than its listener allows"; ``low`` = 0.5 says "nineteen jobs in twenty
waited at most half their margin". The capacity stays within ``floor`` and ``ceiling`` (the
operator's ``--max-load`` x workers, else all the workers) and starts at half the ceiling
(``initial``): no level that a benchmark chose, a conservative start that traffic using it
raises within seconds (docs/architecture.md, *Admission*).

Pure: the time and the signal are passed in; admission calls it on the event loop, and the
server ticks it every ``interval_s`` (``Services.tick_admission``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from voxflow.runtime.slack import SlackStats, jobs_over, pressure_quantile

__all__ = ["Decision", "LoadLimit", "LoadLimitSettings"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadLimitSettings:
    """How the capacity moves (module docstring). None of these is a figure a benchmark chose:
    each is a fraction of the service level, a statistical floor, or the convention of the
    limiters it follows, as its comment says."""

    ceiling: float  # CPU seconds a second at most (the workers, or the operator's share of them)
    floor: float = 0.0  # at least
    # Where it starts, and falls back to when not in use (None: half the ceiling).
    initial: float | None = None
    # Decisions at most this often: about what a turn's listener holds at its start, so that a
    # burst is answered before the streams it admitted have run dry.
    interval_s: float = 1.0
    # New jobs an interval needs before it decides (fewer: it goes on, up to max_window_s): a
    # 95th percentile of fewer than twenty samples is only their maximum.
    min_jobs: int = 20
    max_window_s: float = 10.0
    # How long the jobs seen count (older intervals weigh exp(-age / memory_s)): a few
    # intervals, about as long as a turn admitted now takes to show in the signal (its text
    # stages and first windows), so that a percentile is one of enough jobs and one interval
    # moves it without replacing it. Also how fast a capacity not in use falls back.
    memory_s: float = 4.0
    # How long a capacity not in use is kept before it falls back: RFC 7661's non-validated
    # period (five minutes), the TCP convention for a window the sender has stopped using.
    hold_s: float = 300.0
    # The slack holds while nine jobs in ten waited at most half their margin (``room`` at
    # ``low``), and is spent once more than one in twenty started after its deadline
    # (``quantile`` over ``high``).
    room: float = 0.9
    low: float = 0.5
    quantile: float = 0.95
    high: float = 1.0
    # A cut needs more late jobs than chance explains: their share must pass a one-sided
    # binomial test at this level (the convention, 5%) against the ``1 - quantile`` allowed.
    # Without it, two late jobs in an interval of twenty (what a machine within its limit
    # shows about one interval in four) cut the capacity as deeply as a real overload.
    significance: float = 0.05
    # The capacity is in use (it may grow) while the load reaches this share of it, or a stream
    # was refused (Vegas' and Gradient2's rule against drifting up: half the limit).
    in_use: float = 0.5
    # The mildest and the deepest cut in one interval: concurrency-limits' AIMD backoff (0.9)
    # and its gradient's floor (0.5, TCP's halving).
    min_cut: float = 0.9
    max_cut: float = 0.5

    def __post_init__(self) -> None:
        if self.ceiling <= 0 or not 0 <= self.floor <= self.ceiling:
            raise ValueError("need ceiling > 0 and 0 <= floor <= ceiling")
        if self.initial is not None and not self.floor <= self.initial <= self.ceiling:
            raise ValueError("initial must be within [floor, ceiling]")
        if self.interval_s <= 0 or self.memory_s <= 0 or self.min_jobs < 1 or self.hold_s < 0:
            raise ValueError("need interval_s > 0, memory_s > 0, hold_s >= 0, min_jobs >= 1")
        if self.max_window_s < self.interval_s:
            raise ValueError("need max_window_s >= interval_s")
        if not 0 < self.room <= self.quantile < 1 or not 0 <= self.low < self.high:
            raise ValueError("need 0 < room <= quantile < 1 and 0 <= low < high")
        if not 0 < self.in_use <= 1:
            raise ValueError("need 0 < in_use <= 1")
        if not 0 < self.significance < 1:
            raise ValueError("need 0 < significance < 1")
        if not 0 < self.max_cut <= self.min_cut < 1:
            raise ValueError("need 0 < max_cut <= min_cut < 1")

    @property
    def start(self) -> float:
        """Where the capacity starts, and falls back to when idle."""
        initial = self.ceiling / 2 if self.initial is None else self.initial
        return max(self.floor, min(self.ceiling, initial))


@dataclass(frozen=True)
class Decision:
    """What one interval decided, for the log and the metrics."""

    at: float
    pressure: float  # the recent jobs' ``quantile`` of pressure
    jobs: float  # how many jobs that is (weighted by age)
    capacity: float  # after the decision


class LoadLimit:
    """See the module docstring."""

    def __init__(self, settings: LoadLimitSettings, start: SlackStats, now: float) -> None:
        """``start``: the signal's counters now (the first interval counts from them)."""
        self._settings = settings
        self._capacity = settings.start
        self._base = start  # the signal when the interval began
        self._base_at = now
        self._ticked_at = now
        self._next_at = now + settings.interval_s
        self._recent = [0.0] * len(start.buckets)  # the pressure histogram, older jobs fading
        self._refused = False  # a stream was refused in the interval
        self._stream = 0.0  # the dearest stream admitted or refused in the interval
        self._peak = 0.0  # the highest load admission saw in the interval
        self._tick_peak = 0.0  # ... since the last tick
        self._before_cut: float | None = None  # where recovery aims, after a cut
        self._used_at = now  # when the capacity was last in use (or it started)
        # After a cut: since when the load has been within the capacity (None: not yet).
        self._settled_at: float | None = None
        self.last: Decision | None = None

    @property
    def capacity(self) -> float:
        return self._capacity

    @property
    def settings(self) -> LoadLimitSettings:
        return self._settings

    def refused(self, cost: float) -> None:
        """A stream of ``cost`` (CPU seconds a second) was refused for the capacity."""
        self._refused = True
        self._stream = max(self._stream, cost)

    def admitted(self, cost: float, load: float) -> None:
        """A stream of ``cost`` was admitted; the speaking streams take ``load`` now."""
        self._peak = max(self._peak, load)
        self._tick_peak = max(self._tick_peak, load)
        self._stream = max(self._stream, cost)

    def due(self, now: float) -> bool:
        return now >= self._next_at

    def update(self, now: float, slack: SlackStats, load: float) -> None:
        """Decide on the interval since the last decision, at most once per ``interval_s``:
        ``slack`` is the signal's counters now, ``load`` what the speaking streams take now.
        Call it on a regular tick (an idle capacity falls back between decisions)."""
        s = self._settings
        if now < self._next_at:
            return
        self._next_at = now + s.interval_s
        tick_peak, self._tick_peak = max(self._tick_peak, load), load
        if self._refused or self._in_use(tick_peak):
            self._used_at = now
        elif now - self._used_at > s.hold_s:
            self._fall_back(now, tick_peak)
        self._ticked_at = now
        if load > self._capacity * (1 + 1e-9):
            self._settled_at = None
        elif self._settled_at is None:
            self._settled_at = now
        window = slack.since(self._base)
        enough = window.jobs + window.overdue >= s.min_jobs
        if not enough and now - self._base_at < s.max_window_s:
            return  # too few jobs to judge by: the interval goes on
        fade = math.exp(-(now - self._base_at) / s.memory_s)
        self._recent = [f * fade + n for f, n in zip(self._recent, window.buckets, strict=True)]
        began = self._base_at
        self._base, self._base_at = slack, now
        jobs = sum(self._recent)
        room = pressure_quantile(self._recent, s.room)
        pressure = pressure_quantile(self._recent, s.quantile)
        # The interval alone may say it first: a sudden change (a neighbour took a core) is
        # not diluted by the intervals before it.
        late_now = list(window.buckets)
        late_now[-1] += window.overdue  # the jobs waiting past their deadline now are late
        pressure = max(pressure, pressure_quantile(late_now, s.quantile))
        peak = max(load, self._peak)
        if pressure > s.high:
            # Late jobs that chance explains hold it: neither a cut nor room to grow.
            if self._beyond_chance(self._recent) or self._beyond_chance(late_now):
                self._cut(pressure, peak, began)
        elif room <= s.low and (self._refused or self._in_use(peak)):
            self._grow(room)
        self._refused = False
        self._stream = 0.0
        self._peak = 0.0
        self.last = Decision(now, pressure, jobs, self._capacity)

    def _beyond_chance(self, buckets: Sequence[float]) -> bool:
        """Whether the jobs of ``buckets`` (a pressure histogram; weighted counts are rounded)
        hold more late ones (pressure over ``high``) than a machine that keeps ``quantile`` of
        its jobs in time shows by chance (``significance``)."""
        s = self._settings
        late = round(jobs_over(buckets, s.high))
        return _at_least_chance(late, round(sum(buckets)), 1 - s.quantile) < s.significance

    def _in_use(self, load: float) -> bool:
        """Whether the streams used the capacity (more than ``in_use`` of it: a capacity that
        fell back to twice the load is not raised again by that same load)."""
        return load > self._settings.in_use * self._capacity * (1 + 1e-9)

    def _fall_back(self, now: float, peak: float) -> None:
        """Not in use past ``hold_s``: what it allowed is no longer evidence of what the machine
        carries (TCP's restart after idle, RFC 7661), so it falls back towards its start, or
        towards twice the load, whichever is more."""
        s = self._settings
        target = max(s.start, 2 * peak)
        if self._capacity > target:
            fade = math.exp(-(now - self._ticked_at) / s.memory_s)
            self._capacity = max(target, self._capacity * fade)

    def _cut(self, pressure: float, peak: float, began: float) -> None:
        """``peak``: the most the streams took in the interval, which ``began`` then."""
        s = self._settings
        if self._before_cut is not None and (self._settled_at is None or self._settled_at > began):
            # The last cut has not taken effect over a whole interval yet: the streams
            # admitted before it still speak (and catch up), and a cut now would only pile up.
            return
        # By how far past its margin the bulk of the jobs is (a gradient, as Gradient2Limit's).
        cut = max(s.max_cut, min(s.min_cut, s.high / pressure))
        before = self._capacity
        self._capacity = max(s.floor, min(self._capacity, peak) * cut)
        # Recovery aims below where it was cut from: a cause that stays lowers it each time.
        self._before_cut = max(self._before_cut or 0.0, before * (1 + cut) / 2)
        # What was seen led to this cut; the next decision waits for what follows it.
        self._recent = [0.0] * len(self._recent)
        log.info(
            "admission capacity %.2f -> %.2f (pressure p%g %.2f)",
            before,
            self._capacity,
            100 * s.quantile,
            pressure,
        )

    def _grow(self, pressure: float) -> None:
        s = self._settings
        # One stream; more the less of their margin the jobs used (Vegas grows faster while
        # nothing queues): up to half the capacity when no job waited, one stream at ``low``.
        step = max(self._stream, self._capacity * (1 - pressure / s.low) / 2)
        target = self._before_cut
        if target is not None and target > self._capacity:
            step = max(step, (target - self._capacity) / 2)
        else:
            self._before_cut = None
        self._capacity = min(s.ceiling, self._capacity + step)


def _at_least_chance(k: int, n: int, p: float) -> float:
    """P(X >= k) for X binomial over ``n`` trials of probability ``p`` (0 < p < 1)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    whole = math.lgamma(n + 1)
    return min(
        1.0,
        sum(
            math.exp(
                whole - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
            )
            for i in range(k, n + 1)
        ),
    )
