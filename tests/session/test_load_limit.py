"""Tests for voxflow.session.load_limit: the admitted capacity learnt from the workers' slack,
on a fake clock, with the signal's counters made up interval by interval."""

from __future__ import annotations

import bisect
import itertools

import pytest

from voxflow.runtime.slack import PRESSURE_BOUNDS, SlackStats
from voxflow.session.load_limit import LoadLimit, LoadLimitSettings

STREAM = 0.1  # one stream's cost


class Signal:
    """The scheduler's counters, grown by what each interval's jobs waited."""

    def __init__(self) -> None:
        self.stats = SlackStats()

    def add(self, jobs: int, pressure: float, overdue: int = 0) -> SlackStats:
        buckets = list(self.stats.buckets)
        buckets[bisect.bisect_left(PRESSURE_BOUNDS, pressure)] += jobs
        s = self.stats
        self.stats = SlackStats(
            s.jobs + jobs, tuple(buckets), s.pressure_sum + jobs * pressure, overdue=overdue
        )
        return self.stats


def _limit(floor: float = 0.0, initial: float | None = None) -> tuple[LoadLimit, Signal]:
    signal = Signal()
    settings = LoadLimitSettings(ceiling=2.0, floor=floor, initial=initial)
    return LoadLimit(settings, signal.stats, 0.0), signal


def _run(
    limit: LoadLimit,
    signal: Signal,
    start: float,
    seconds: int,
    pressure: float,
    load: float | None = None,
    refuse: bool = False,
    jobs: int = 30,
) -> list[float]:
    """``seconds`` intervals of ``jobs`` jobs at ``pressure``, admission seeing ``load`` (None:
    the capacity, all of it in use) and refusing a stream when ``refuse``; the capacity after
    each."""
    capacities = []
    for t in range(1, seconds + 1):
        now = start + t
        carried = limit.capacity if load is None else load
        limit.admitted(STREAM, carried)
        if refuse:
            limit.refused(STREAM)
        limit.update(now, signal.add(jobs, pressure), carried)
        capacities.append(limit.capacity)
    return capacities


def test_it_starts_at_half_the_ceiling() -> None:
    limit, _ = _limit()
    assert limit.capacity == 1.0
    assert LoadLimitSettings(ceiling=2.0, initial=0.3).start == 0.3


def test_it_rises_while_in_use_and_the_slack_holds_up_to_the_ceiling() -> None:
    limit, signal = _limit()
    capacities = _run(limit, signal, 0.0, 20, pressure=0.2, refuse=True)
    assert capacities[0] > 1.0
    assert all(b >= a for a, b in itertools.pairwise(capacities))
    assert capacities[-1] == 2.0  # and no further


def test_it_grows_by_about_one_stream_when_the_jobs_used_half_their_margin() -> None:
    limit, signal = _limit()
    (after,) = _run(limit, signal, 0.0, 1, pressure=0.5, refuse=True)
    assert after == pytest.approx(1.0 + STREAM)


def test_a_capacity_nobody_uses_does_not_rise() -> None:
    limit, signal = _limit()
    assert _run(limit, signal, 0.0, 10, pressure=0.05, load=0.3) == [1.0] * 10


def test_it_holds_in_the_band_between_the_thresholds() -> None:
    limit, signal = _limit()
    assert _run(limit, signal, 0.0, 10, pressure=0.75, refuse=True) == [1.0] * 10


def test_spent_slack_cuts_it_by_how_late_the_jobs_are_at_most_once_an_interval() -> None:
    limit, signal = _limit(initial=1.6)
    limit.admitted(STREAM, 1.6)
    limit.update(1.0, signal.add(30, 1.25), 1.6)
    assert limit.capacity == pytest.approx(1.6 * 0.8)  # high / pressure = 1 / 1.25
    limit.update(1.5, signal.add(30, 3.0), 1.6)  # within the interval: no second cut
    assert limit.capacity == pytest.approx(1.28)


def test_a_few_late_jobs_are_chance_and_cut_nothing_but_more_of_them_cut() -> None:
    # Two late jobs of twenty (one in twenty is allowed) put the 95th percentile past its
    # deadline, but a machine within its limit shows that about one interval in four.
    limit, signal = _limit(initial=1.6)
    signal.add(18, 0.3)
    limit.update(1.0, signal.add(2, 1.25), 1.6)
    assert limit.last is not None and limit.last.pressure > 1.0
    assert limit.capacity == 1.6
    # Five of twenty is not chance (under 1% for a machine that keeps 95% in time).
    limit, signal = _limit(initial=1.6)
    signal.add(15, 0.3)
    limit.update(1.0, signal.add(5, 1.25), 1.6)
    assert limit.capacity == pytest.approx(1.6 * 0.8)
    # Two late of twenty in every interval: 10% of the recent jobs, which their number makes
    # more than chance within a few intervals.
    limit, signal = _limit(initial=1.6)
    for t in range(1, 11):
        signal.add(18, 0.3)
        limit.update(float(t), signal.add(2, 1.25), 1.6)
    assert limit.capacity < 1.6


def test_no_cut_piles_up_while_the_streams_admitted_before_the_last_one_speak() -> None:
    limit, signal = _limit(initial=1.6)
    _run(limit, signal, 0.0, 1, pressure=3.0, load=1.6)
    assert limit.capacity == pytest.approx(0.8)  # the deepest cut: half
    # Still late, but the load is still over the capacity: refusing is all a cut could do.
    assert _run(limit, signal, 1.0, 3, pressure=3.0, load=1.5) == [pytest.approx(0.8)] * 3
    # Once the load has been within it for a whole interval, a further cut is the machine's
    # answer again.
    after = _run(limit, signal, 4.0, 2, pressure=3.0, load=0.8)
    assert after == [pytest.approx(0.8), pytest.approx(0.4)]


def test_it_is_cut_from_the_load_when_that_is_lower() -> None:
    limit, signal = _limit(initial=2.0)
    _run(limit, signal, 0.0, 1, pressure=2.0, load=1.0)
    assert limit.capacity == pytest.approx(0.5)


def test_it_stays_within_its_floor_and_ceiling() -> None:
    limit, signal = _limit(floor=0.6)
    _run(limit, signal, 0.0, 10, pressure=3.0, load=0.6)
    assert limit.capacity == 0.6
    high, signal = _limit()
    assert max(_run(high, signal, 0.0, 30, pressure=0.0, refuse=True)) == 2.0


def test_a_burst_cuts_it_and_it_comes_back_within_a_few_intervals_without_oscillating() -> None:
    limit, signal = _limit(initial=1.6)
    _run(limit, signal, 0.0, 5, pressure=0.6, refuse=True)  # held at 1.6
    _run(limit, signal, 5.0, 1, pressure=2.0)  # a burst of late jobs
    assert limit.capacity == pytest.approx(0.8)
    after = _run(limit, signal, 6.0, 8, pressure=0.4, refuse=True)
    assert after[2] >= 1.2  # half the way back each interval, not a stream at a time
    assert all(b >= a for a, b in itertools.pairwise(after))  # no swing down
    # Back near where it was: a burst that has passed does not lower it for good.
    assert 1.2 <= after[-1] <= 1.6 + 8 * STREAM


def test_a_cause_that_stays_lowers_where_recovery_aims() -> None:
    limit, signal = _limit(initial=1.6)
    _run(limit, signal, 0.0, 1, pressure=2.0, load=1.6)
    recovered = _run(limit, signal, 1.0, 4, pressure=0.5, refuse=True)
    assert recovered[-1] < 1.6  # three quarters of the way, then a stream at a time


def test_jobs_waiting_past_their_deadline_cut_it_before_a_worker_takes_them() -> None:
    limit, signal = _limit(initial=1.6)
    limit.update(1.0, signal.add(25, 0.1, overdue=10), 1.6)
    assert limit.capacity < 1.6


def test_too_few_jobs_wait_for_more_before_they_move_it() -> None:
    limit, signal = _limit(initial=1.6)
    _run(limit, signal, 0.0, 3, pressure=3.0, jobs=5, load=1.6)
    assert limit.capacity == 1.6 and limit.last is None
    _run(limit, signal, 3.0, 1, pressure=3.0, jobs=5, load=1.6)  # 20 jobs now
    assert limit.capacity < 1.6 and limit.last is not None


def test_a_capacity_not_in_use_is_kept_for_a_while_then_falls_back_towards_its_start() -> None:
    limit, signal = _limit()
    _run(limit, signal, 0.0, 20, pressure=0.0, refuse=True)
    assert limit.capacity == 2.0
    hold = int(limit.settings.hold_s)
    # A lull between calls: nothing says the machine changed, so it is kept.
    lull = _run(limit, signal, 20.0, hold, pressure=0.0, load=0.0, jobs=0)
    assert set(lull) == {2.0}
    # ... and the calls that come back use it and keep it.
    _run(limit, signal, 20.0 + hold, 5, pressure=0.0, load=1.5)
    assert limit.capacity == 2.0
    quiet = _run(limit, signal, 25.0 + hold, hold + 20, pressure=0.0, load=0.0, jobs=0)
    assert quiet[hold - 1] == 2.0 and quiet[hold + 1] < 2.0
    assert quiet[-1] == pytest.approx(1.0)  # no lower than its start
    assert all(b <= a for a, b in itertools.pairwise(quiet))
    # ... and no lower than twice a load that is there.
    busy, signal = _limit()
    _run(busy, signal, 0.0, 20, pressure=0.0, refuse=True)
    assert _run(busy, signal, 20.0, hold + 20, pressure=0.0, load=0.8)[-1] == pytest.approx(1.6)


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="ceiling"):
        LoadLimitSettings(ceiling=0.0)
    with pytest.raises(ValueError, match="initial"):
        LoadLimitSettings(ceiling=1.0, initial=2.0)
    with pytest.raises(ValueError, match="low < high"):
        LoadLimitSettings(ceiling=1.0, low=1.0, high=0.5)
    with pytest.raises(ValueError, match="max_cut"):
        LoadLimitSettings(ceiling=1.0, min_cut=0.4, max_cut=0.5)
    with pytest.raises(ValueError, match="significance"):
        LoadLimitSettings(ceiling=1.0, significance=0.0)
