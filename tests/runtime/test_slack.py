"""Tests for voxflow.runtime.slack: the workers' slack against their listeners, as the
scheduling policy measures it where jobs are taken and finished (on a clock the tests move)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.blank_utterance import SPF, blank_utterance
from voxflow.engines.base import VoiceSettings
from voxflow.runtime.costs import CostModel
from voxflow.runtime.jobs import SegmentRequest
from voxflow.runtime.policy import SchedulingPolicy
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.runtime.slack import (
    PRESSURE_BOUNDS,
    SlackMeter,
    SlackStats,
    jobs_over,
    pressure_quantile,
)
from voxflow.runtime.stream import StreamState
from voxflow.runtime.work import Job, Lane


def _take(policy: SchedulingPolicy, now: float) -> tuple[StreamState, Job]:
    picked = policy.next_job(now, busy=1)
    assert picked is not None
    return picked


def _finish(
    policy: SchedulingPolicy, stream: StreamState, job: Job, now: float, cpu_s: float = 0.01
) -> None:
    if job.window is None:
        policy.prepared(stream, job, blank_utterance(2000), cpu_s, now, cpu_s=cpu_s)
    else:
        audio = np.zeros((job.window[1] - job.window[0]) * SPF, dtype=np.float32)
        policy.rendered(stream, job, audio, cpu_s, now, cpu_s=cpu_s)


def _playing(policy: SchedulingPolicy, paced: bool = True) -> StreamState:
    """A stream whose text stage and first window ran at 0: its listener has audio in hand."""
    stream = policy.open_stream(lambda _event: None, CostModel(), paced=paced)
    policy.submit(stream, SegmentRequest("Hello there.", "joe", VoiceSettings(), 0), 0.0)
    for _ in range(2):
        _finish(policy, *_take(policy, 0.0), 0.0)
    assert not stream.fresh(0.0)
    return stream


# -- the meter -------------------------------------------------------------------------------


def test_pressure_is_a_jobs_wait_over_the_margin_it_had_when_ready() -> None:
    meter = SlackMeter()
    assert meter.taken(ready=1.0, deadline=3.0, now=1.0) == 0.0  # served at once
    assert meter.taken(ready=1.0, deadline=3.0, now=2.0) == 0.5
    assert meter.taken(ready=1.0, deadline=3.0, now=4.0) == 1.5  # late
    stats = meter.snapshot()
    assert stats.jobs == 3 and stats.pressure_sum == pytest.approx(2.0)
    assert stats.wait_s == pytest.approx(4.0)
    assert stats.quantile(0.5) == 0.5 and stats.quantile(1.0) == 1.5


def test_a_job_with_no_margin_left_when_ready_is_counted_apart() -> None:
    meter = SlackMeter()
    assert meter.taken(ready=2.0, deadline=1.5, now=2.5) is None  # its text came late
    stats = meter.snapshot()
    assert (stats.jobs, stats.text_late) == (0, 1)


def test_an_interval_is_the_difference_of_two_snapshots() -> None:
    meter = SlackMeter()
    meter.taken(0.0, 1.0, 2.0)
    meter.missed()
    before = meter.snapshot()
    meter.taken(0.0, 1.0, 0.1)
    meter.first_audio(waited_s=0.05, allowance_s=0.1)
    window = meter.snapshot(overdue=3).since(before)
    assert (window.jobs, window.misses, window.first_audios, window.overdue) == (2, 0, 1, 3)
    assert window.quantile(1.0) == 0.5  # the first audio's: half its allowance


def test_a_quantile_is_the_upper_bound_of_the_bucket_that_holds_it() -> None:
    counts = [0.0] * (len(PRESSURE_BOUNDS) + 1)
    assert pressure_quantile(counts, 0.95) == 0.0  # no job
    counts[0] = 19  # at most 0.05
    counts[-1] = 1  # past the last bound
    assert pressure_quantile(counts, 0.95) == PRESSURE_BOUNDS[0]
    assert pressure_quantile(counts, 0.99) == math.inf
    assert SlackStats().quantile(0.95) == 0.0


def test_jobs_over_a_pressure_are_those_of_the_buckets_past_it() -> None:
    meter = SlackMeter()
    for pressure in (0.2, 1.0, 1.1, 1.3, 5.0):  # ready at 0, due at 1: pressure = the wait
        meter.taken(0.0, 1.0, pressure)
    buckets = meter.snapshot().buckets
    assert jobs_over(buckets, 1.0) == 3  # 1.0 is in time; 1.1, 1.3 and 5.0 are late
    assert jobs_over(buckets, 0.0) == 5
    assert jobs_over(buckets, 3.0) == 1
    assert jobs_over([0.0] * len(buckets), 1.0) == 0


# -- what the policy counts ------------------------------------------------------------------


def test_a_playing_streams_job_counts_its_wait_for_a_worker() -> None:
    waits = []
    for taken_at in (0.0, 0.2, 0.4):
        policy = SchedulingPolicy(SchedulerSettings())
        _playing(policy)
        before = policy.slack.snapshot()
        _take(policy, taken_at)  # ready since 0, when its window before ended
        window = policy.slack.snapshot().since(before)
        assert window.jobs == 1
        waits.append(window.pressure_sum)
    assert waits[0] == 0.0 and 0 < waits[1] < waits[2]


def test_first_audio_and_unpaced_jobs_are_not_counted_as_run_dry_waits() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    fresh = policy.open_stream(lambda _event: None, CostModel())
    policy.submit(fresh, SegmentRequest("Hello there.", "joe", VoiceSettings(), 0), 0.0)
    stream, _ = _take(policy, 0.05)  # its text stage, late for its first audio's target
    assert stream is fresh and policy.slack.snapshot().jobs == 0
    unpaced = SchedulingPolicy(SchedulerSettings())
    _playing(unpaced, paced=False)  # a whole-text request: renders as fast as it can
    before = unpaced.slack.snapshot()
    _take(unpaced, 0.5)
    assert unpaced.slack.snapshot().since(before).jobs == 0


def test_a_streams_first_audio_counts_what_it_waited_beyond_its_own_work() -> None:
    settings = SchedulerSettings()
    policy = SchedulingPolicy(settings)
    stream = policy.open_stream(lambda _event: None, CostModel())
    policy.submit(stream, SegmentRequest("Hello there.", "joe", VoiceSettings(), 0), 0.0)
    _finish(policy, *_take(policy, 0.0), 0.02, cpu_s=0.02)  # its text stage, at once
    _finish(policy, *_take(policy, 0.07), 0.1, cpu_s=0.03)  # its first window waited 50 ms
    stats = policy.slack.snapshot()
    assert stats.first_audios == 1
    assert stats.pressure_sum == pytest.approx(0.05 / settings.first_audio_s)


def test_a_window_that_comes_after_its_listener_ran_out_is_a_miss() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    stream = _playing(policy)
    end = stream.playback_end()
    assert end is not None
    s, job = _take(policy, 0.0)
    _finish(policy, s, job, end + 0.1)  # its listener has been dry for 0.1 s
    assert policy.slack.snapshot().misses == 1


def test_jobs_waiting_past_their_deadline_are_counted_before_a_worker_takes_them() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    stream = _playing(policy)
    end = stream.playback_end()
    assert end is not None
    assert policy.slack_stats(0.0).overdue == 0
    assert policy.slack_stats(end).overdue == 1  # nobody took its next window
    _take(policy, end)
    assert policy.slack_stats(end).overdue == 0
    assert Lane.MAIN in stream.busy
