"""Tests for voxflow.runtime.policy: which job runs next and what results mean, on a clock that
stands still unless a test moves it. Jobs are "run" by handing their results back at once, with
utterances of a given length and silent audio."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.blank_utterance import RATE, SPF, blank_utterance
from voxflow.engines.base import VoiceSettings
from voxflow.runtime.costs import CostModel
from voxflow.runtime.jobs import (
    Drained,
    Prepared,
    Rendered,
    SchedulerEvent,
    SegmentRequest,
    Skipped,
    Takeover,
)
from voxflow.runtime.policy import SchedulingPolicy
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.runtime.stream import StreamState
from voxflow.runtime.work import Job, Lane

LONG_FRAMES = 2000  # 23 s of audio: a stream that never runs out of frames to render here


def _seconds(frames: int) -> float:
    return frames * SPF / RATE


def _open(policy: SchedulingPolicy, now: float = 0.0, text: str = "Hello there.") -> StreamState:
    """A stream with one segment queued."""
    stream = policy.open_stream(lambda _event: None, CostModel())
    policy.submit(stream, SegmentRequest(text, "joe", VoiceSettings(), 0), now)
    return stream


def _complete(
    policy: SchedulingPolicy,
    stream: StreamState,
    job: Job,
    now: float,
    frames: int = LONG_FRAMES,
    learn: bool = False,
    cpu_s: float | None = None,
) -> list[SchedulerEvent]:
    """Hand ``job``'s result back: an utterance of ``frames`` for a text stage, silent audio for
    a window."""
    if job.window is None:
        return policy.prepared(stream, job, blank_utterance(frames), 0.01, now, learn, cpu_s)
    audio = np.zeros((job.window[1] - job.window[0]) * SPF, dtype=np.float32)
    return policy.rendered(stream, job, audio, 0.01, now, learn, cpu_s)


def _playing(policy: SchedulingPolicy, windows: int, now: float = 0.0) -> StreamState:
    """A stream whose text stage and first ``windows`` windows ran at ``now``: audio in hand.
    Streams made so must be made from the most windows to the fewest: each one's jobs must be
    the most urgent while it is made."""
    stream = _open(policy, now)
    for _ in range(windows + 1):
        picked = policy.next_job(now, busy=1)
        assert picked is not None and picked[0] is stream
        _complete(policy, *picked, now)
    assert stream.playback_end() is not None
    return stream


def _next(policy: SchedulingPolicy, now: float, first_audio: bool = False) -> StreamState | None:
    picked = policy.next_job(now, busy=1, first_audio=first_audio)
    return None if picked is None else picked[0]


# -- what runs next --------------------------------------------------------------------------------


def test_the_stream_that_runs_dry_soonest_is_served_first() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    ahead = _playing(policy, windows=4)
    short = _playing(policy, windows=1)
    ahead_end, short_end = ahead.playback_end(), short.playback_end()
    assert ahead_end is not None and short_end is not None and short_end < ahead_end
    # Queued last, but it runs out first.
    assert _next(policy, 0.0) is short
    assert _next(policy, 0.0) is ahead
    assert _next(policy, 0.0) is None  # each has its job running


def test_a_fresh_streams_first_job_comes_before_a_playing_streams_later_deadline() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    playing = _playing(policy, windows=3)  # seconds of audio in hand
    fresh = _open(policy)
    assert _next(policy, 0.0) is fresh  # its text stage, due first_audio_s after its text
    assert _next(policy, 0.0) is playing


def test_a_playing_stream_about_to_run_dry_comes_before_a_fresh_one() -> None:
    # First audio due late enough that a stream with one small window in hand is more urgent.
    policy = SchedulingPolicy(SchedulerSettings(first_audio_s=0.5))
    playing = _playing(policy, windows=1)
    end = playing.playback_end()
    assert end is not None and end < 0.5
    fresh = _open(policy)
    assert _next(policy, 0.0) is playing
    assert _next(policy, 0.0) is fresh


def test_a_stream_far_ahead_of_its_listener_waits_to_be_released() -> None:
    policy = SchedulingPolicy(SchedulerSettings(max_lead_s=1.0))
    playing = _playing(policy, windows=2)  # a small first window, then a large one
    end = playing.playback_end()
    assert end is not None and end > 1.0
    assert _next(policy, 0.0) is None  # more than max_lead_s ahead: not released
    assert policy.next_release_s(0.0) == pytest.approx(end - 1.0)
    assert _next(policy, end - 1.0) is playing


def test_first_audio_jobs_are_only_those_of_streams_with_no_audio_in_hand() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    playing = _playing(policy, windows=2)
    assert _next(policy, 0.0, first_audio=True) is None  # a playing stream's window: never
    fresh = _open(policy)
    picked = policy.next_job(0.0, busy=1, first_audio=True)
    assert picked is not None and picked[0] is fresh and picked[1].window is None  # text stage
    _complete(policy, *picked, 0.0)
    picked = policy.next_job(0.0, busy=1, first_audio=True)
    assert picked is not None and picked[0] is fresh and picked[1].window is not None  # window 1
    _complete(policy, *picked, 0.0)
    # Both have audio in hand now: their windows go to the other workers only.
    assert _next(policy, 0.0, first_audio=True) is None
    assert {_next(policy, 0.0), _next(policy, 0.0)} == {playing, fresh}


def test_a_held_stream_gets_no_job_until_it_is_let_go() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    other = _playing(policy, windows=3)
    held = _playing(policy, windows=1)
    policy.hold(held, True, 0.0)
    assert _next(policy, 0.0) is other  # held runs out sooner, but its owner is full
    assert _next(policy, 0.0) is None
    policy.hold(held, False, 0.0)
    assert _next(policy, 0.0) is held


def test_a_cancelled_stream_loses_its_queued_jobs_and_is_forgotten() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    other = _playing(policy, windows=3)
    cancelled = _playing(policy, windows=1)
    policy.cancel(cancelled)
    assert cancelled.id not in policy.streams and other.id in policy.streams
    assert _next(policy, 0.0) is other
    assert _next(policy, 0.0) is None


def test_a_window_in_flight_when_its_stream_is_cancelled_is_discarded() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    stream = _playing(policy, windows=1)
    picked = policy.next_job(0.0, busy=1)
    assert picked is not None
    policy.close_input(stream, 0.0)
    policy.cancel(stream)
    assert _complete(policy, *picked, 0.0) == []  # no audio, and no Drained either


def test_each_work_that_leaves_the_queue_is_retired_once() -> None:
    # What is kept per work outside the policy (the phrase cache's) is released on ``retired``.
    retired: list[int] = []
    policy = SchedulingPolicy(SchedulerSettings(), lambda work: retired.append(work.request.tag))
    stream = policy.open_stream(lambda _event: None, CostModel())
    for tag in range(3):
        policy.submit(stream, SegmentRequest("Hello there.", "joe", VoiceSettings(), tag), 0.0)
    while not retired:  # the first rendered to its end
        picked = policy.next_job(0.0, busy=1)
        assert picked is not None and picked[1].work.request.tag == 0
        _complete(policy, *picked, 0.0, frames=30)
    picked = policy.next_job(0.0, busy=1)  # the second fails in its text stage
    assert picked is not None and picked[1].window is None
    policy.failed(stream, picked[1], RuntimeError("no voice"), 0.0)
    assert retired == [0, 1]
    policy.cancel(stream)  # the third is still queued
    assert retired == [0, 1, 2]


# -- results ---------------------------------------------------------------------------------------


def test_a_closed_stream_drains_once_after_its_last_window_and_is_forgotten() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    stream = _open(policy)
    assert policy.close_input(stream, 0.0) == []  # its segment has not run yet
    events: list[SchedulerEvent] = []
    while (picked := policy.next_job(0.0, busy=1)) is not None:
        events += _complete(policy, *picked, 0.0, frames=100)
    kinds = [type(e) for e in events]
    assert kinds.count(Prepared) == 1 and kinds.count(Drained) == 1
    assert kinds[-1] is Drained  # after the last window
    windows = [e for e in events if isinstance(e, Rendered)]
    assert windows[-1].last and sum(w.end_frame - w.start_frame for w in windows) == 100
    assert stream.id not in policy.streams
    assert policy.close_input(stream, 0.0) == []  # never a second Drained


def test_a_stream_closed_with_nothing_queued_drains_at_once() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    stream = policy.open_stream(lambda _event: None, CostModel())
    assert policy.close_input(stream, 0.0) == [Drained()]
    assert stream.id not in policy.streams


def _first_window_cost(learn: bool, cpu_s: float | None, compute_s: float = 0.01) -> CostModel:
    """A stream's cost model after its text stage (``cpu_s``) and first window (``cpu_s`` per
    ``compute_s`` of wall time), both run beside another job (not wide)."""
    policy = SchedulingPolicy(SchedulerSettings())
    stream = _open(policy)
    costs = stream.costs
    for _ in range(2):
        picked = policy.next_job(0.0, busy=1)
        assert picked is not None and picked[1].threads is None
        job = picked[1]
        if job.window is None:
            policy.prepared(stream, job, blank_utterance(LONG_FRAMES), compute_s, 0.0, learn, cpu_s)
        else:
            audio = np.zeros((job.window[1] - job.window[0]) * SPF, dtype=np.float32)
            policy.rendered(stream, job, audio, compute_s, 0.0, learn, cpu_s)
    return costs


def test_results_teach_the_streams_cpu_per_audio_second_in_cpu_time() -> None:
    prior = CostModel().audio_cost_s
    # Two jobs of 0.2 CPU s for 16 frames (0.19 s of audio): far dearer than the prior.
    dear = _first_window_cost(learn=True, cpu_s=0.2)
    assert prior < dear.audio_cost_s < 0.4 / _seconds(16)
    cheap = _first_window_cost(learn=True, cpu_s=0.0)
    assert cheap.audio_cost_s < prior
    # What the jobs took on the wall clock does not count: only their CPU time.
    slow_wall = _first_window_cost(learn=True, cpu_s=0.2, compute_s=5.0)
    assert slow_wall.audio_cost_s == pytest.approx(dear.audio_cost_s)


def test_cached_results_teach_nothing() -> None:
    costs = _first_window_cost(learn=False, cpu_s=0.2)
    fresh = CostModel()
    assert costs.audio_cost_s == fresh.audio_cost_s
    assert costs.render_per_frame_s == fresh.render_per_frame_s
    assert costs.prepare_per_char_s == fresh.prepare_per_char_s


def test_a_wide_job_does_not_teach_the_cpu_per_audio_second() -> None:
    policy = SchedulingPolicy(SchedulerSettings(wide_threads=2))
    stream = _open(policy)
    prior = stream.costs.audio_cost_s
    # Nothing else runs or waits: the fresh stream's jobs may use every core.
    picked = policy.next_job(0.0, busy=0)
    assert picked is not None and picked[1].threads == 2
    _complete(policy, *picked, 0.0, learn=True, cpu_s=1.0)
    picked = policy.next_job(0.0, busy=0)
    assert picked is not None and picked[1].window is not None and picked[1].threads == 2
    render_rate = stream.costs.render_per_frame_s
    _complete(policy, *picked, 0.0, learn=True, cpu_s=1.0)
    assert stream.costs.audio_cost_s == prior
    # Its wall time still teaches how long such a window takes.
    assert stream.costs.render_per_frame_s != render_rate


def _wide_engine_playing(policy: SchedulingPolicy) -> StreamState:
    """A stream of an engine that may need every core (``wide_windows``, Kokoro) with its first
    window in hand; both its first jobs, on the way to first audio, ran on every core."""
    costs = CostModel(wide_windows=True, render_per_frame_s=0.001)
    stream = policy.open_stream(lambda _event: None, costs)
    policy.submit(stream, SegmentRequest("Hello there.", "joe", VoiceSettings(), 0), 0.0)
    for _ in range(2):
        picked = policy.next_job(0.0, busy=0)
        assert picked is not None and picked[1].threads == 2
        _complete(policy, *picked, 0.0)
    assert stream.playback_end() is not None
    return stream


def test_a_wide_engine_s_window_takes_every_core_only_when_one_would_be_late() -> None:
    # With its first window in hand and a window costing a few ms on one core: its worker's
    # own thread count (None), one core.
    policy = SchedulingPolicy(SchedulerSettings(wide_threads=2))
    _wide_engine_playing(policy)
    picked = policy.next_job(0.0, busy=0)
    assert picked is not None and picked[1].window is not None and picked[1].threads is None
    # The same stream when its listener is about to run dry: one core would come late.
    policy = SchedulingPolicy(SchedulerSettings(wide_threads=2))
    stream = _wide_engine_playing(policy)
    end = stream.playback_end()
    assert end is not None
    picked = policy.next_job(end - 0.01, busy=0)
    assert picked is not None and picked[1].window is not None and picked[1].threads == 2
    # ... but not while another job runs: then it has one core anyway.
    policy = SchedulingPolicy(SchedulerSettings(wide_threads=2))
    stream = _wide_engine_playing(policy)
    picked = policy.next_job(end - 0.01, busy=1)
    assert picked is not None and picked[1].threads is None


# -- leads and the quiet bound ---------------------------------------------------------------------


def _lead_pair(tag: int) -> tuple[SegmentRequest, SegmentRequest]:
    """A lead ("Would you like me") and its takeover (the whole sentence)."""
    lead = SegmentRequest("Would you like me", "joe", VoiceSettings(), tag, lead=True)
    whole = SegmentRequest(
        "Would you like me to book it for you?",
        "joe",
        VoiceSettings(),
        tag + 1,
        takeover=Takeover(tag, ((0, 0), (6, 6), (10, 10), (15, 15), (17, 17))),
    )
    return lead, whole


def _render_head(policy: SchedulingPolicy, stream: StreamState, now: float) -> None:
    """Run ``stream``'s queued jobs until its head segment is rendered to its end."""
    head = stream.works[0]
    while stream.works and stream.works[0] is head:
        picked = policy.next_job(now, busy=1)
        assert picked is not None and picked[0] is stream
        _complete(policy, *picked, now, frames=400)


def _behind_audio(in_hand_s: float) -> tuple[SchedulingPolicy, StreamState, float]:
    """A stream whose first segment is rendered, and the moment its listener has ``in_hand_s``
    of it left: where a lead and its takeover arrive in the tests below."""
    policy = SchedulingPolicy(SchedulerSettings())
    stream = _open(policy)
    _render_head(policy, stream, 0.0)
    end = stream.playback_end()
    assert end is not None and end > in_hand_s
    return policy, stream, end - in_hand_s


def test_a_lead_whose_takeover_is_queued_is_skipped_while_its_listener_has_audio_in_hand() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    stream = _open(policy)
    _render_head(policy, stream, 0.0)  # 4.6 s of audio in hand
    lead, whole = _lead_pair(1)
    assert policy.submit(stream, lead, 0.0) == []
    assert policy.submit(stream, whole, 0.0) == [Skipped(1)]
    picked = policy.next_job(0.0, busy=1)
    # The takeover's text stage, at once: nothing holds it back for the listener's sake.
    assert picked is not None and picked[1].work.request is whole and picked[1].window is None
    _complete(policy, *picked, 0.0, frames=100)
    picked = policy.next_job(0.0, busy=1)
    assert picked is not None and picked[1].window is not None
    events = _complete(policy, *picked, 0.0)
    first = next(e for e in events if isinstance(e, Rendered))
    assert first.tag == 2 and first.first and first.splice_frames == 0  # from its start


def test_a_lead_whose_takeover_comes_during_its_text_stage_is_skipped_and_its_result_dropped() -> (
    None
):
    policy = SchedulingPolicy(SchedulerSettings())
    stream = _open(policy)
    _render_head(policy, stream, 0.0)
    lead, whole = _lead_pair(1)
    policy.submit(stream, lead, 0.0)
    picked = policy.next_job(0.0, busy=1)
    assert picked is not None and picked[1].work.request is lead and picked[1].window is None
    assert policy.submit(stream, whole, 0.0) == [Skipped(1)]
    assert _complete(policy, *picked, 0.0, frames=60) == []  # nobody waits for it any more
    picked = policy.next_job(0.0, busy=1)
    assert picked is not None and picked[1].work.request is whole and picked[1].window is None


def test_a_takeover_prepared_before_its_lead_rendered_anything_replaces_it_whole() -> None:
    # Too little in hand to skip the lead before its text stage, so both text stages run: the
    # takeover's does not wait for the lead's first window once the listener has audio.
    # Less in hand than the takeover's first audio takes, with the lead hold.
    policy, stream, now = _behind_audio(SchedulerSettings().lead_hold_s)
    lead, whole = _lead_pair(1)
    assert policy.submit(stream, lead, now) == [] and policy.submit(stream, whole, now) == []
    first = policy.next_job(now, busy=0)
    second = policy.next_job(now, busy=1)
    assert first is not None and second is not None
    assert {first[1].work.request.tag, second[1].work.request.tag} == {1, 2}
    takeover_job = first if first[1].work.request is whole else second
    lead_job = second if takeover_job is first else first
    assert [type(e) for e in _complete(policy, *lead_job, now, frames=60)] == [Prepared]
    events = _complete(policy, *takeover_job, now, frames=100)
    assert Skipped(1) in events
    picked = policy.next_job(now, busy=1)
    assert picked is not None and picked[1].work.request is whole and picked[1].window is not None


def test_a_lead_that_comes_to_the_head_behind_audio_in_hand_is_skipped() -> None:
    # The lead and its takeover arrive while an earlier segment is still being rendered.
    policy = SchedulingPolicy(SchedulerSettings())
    stream = _open(policy)
    _render_head(policy, stream, 0.0)
    policy.submit(stream, SegmentRequest("And one more thing.", "joe", VoiceSettings(), 9), 0.0)
    lead, whole = _lead_pair(10)
    assert policy.submit(stream, lead, 0.0) == [] and policy.submit(stream, whole, 0.0) == []
    events: list[SchedulerEvent] = []
    while stream.works and stream.works[0].request.tag == 9:
        picked = policy.next_job(0.0, busy=1)
        assert picked is not None
        events += _complete(policy, *picked, 0.0, frames=100)
    assert Skipped(10) in events
    assert stream.works[0].request is whole


def test_a_turns_first_lead_is_kept_for_its_first_audio() -> None:
    policy = SchedulingPolicy(SchedulerSettings())
    stream = policy.open_stream(lambda _event: None, CostModel())
    lead, whole = _lead_pair(0)
    assert policy.submit(stream, lead, 0.0) == [] and policy.submit(stream, whole, 0.0) == []
    picked = policy.next_job(0.0, busy=1)
    assert picked is not None and picked[1].work.request is lead


def test_a_lead_is_kept_when_its_listener_would_run_dry_before_the_takeovers_first_audio() -> None:
    policy, stream, now = _behind_audio(0.2)  # less than the lead hold alone
    lead, whole = _lead_pair(1)
    assert policy.submit(stream, lead, now) == [] and policy.submit(stream, whole, now) == []
    picked = policy.next_job(now, busy=1)
    assert picked is not None and picked[1].work.request is lead


def test_a_lead_waiting_for_its_takeover_is_not_quiet_longer_than_the_bound() -> None:
    # Its listener has seconds in hand, so the lead waits for the rest of its sentence, but
    # not past what the quiet bound allows: a framework would take the silence for the end.
    settings = SchedulerSettings()
    assert settings.max_quiet_s is not None
    policy = SchedulingPolicy(settings)
    stream = _open(policy)
    _render_head(policy, stream, 0.0)
    lead, _whole = _lead_pair(1)
    policy.submit(stream, lead, 0.0)
    picked = policy.next_job(0.0, busy=1)  # its text stage: it sends nothing
    assert picked is not None and picked[1].window is None
    _complete(policy, *picked, 0.0, frames=60)
    assert policy.next_job(0.0, busy=1) is None
    wait = policy.next_release_s(0.0)
    assert wait is not None and 0.0 < wait < settings.max_quiet_s
    picked = policy.next_job(wait, busy=1)
    assert picked is not None and picked[1].work.request is lead and picked[1].window is not None


def _ahead(policy: SchedulingPolicy) -> StreamState:
    """A stream rendered at time 0 until it is ``max_lead_s`` ahead of its listener."""
    stream = _open(policy)
    while (picked := policy.next_job(0.0, busy=1)) is not None:
        _complete(policy, *picked, 0.0)
    return stream


def test_a_stream_far_ahead_of_its_listener_still_sends_within_the_quiet_bound() -> None:
    settings = SchedulerSettings(max_lead_s=3.0)
    assert settings.max_quiet_s is not None
    policy = SchedulingPolicy(settings)
    stream = _ahead(policy)
    now = policy.next_release_s(0.0)  # released again as its listener catches up
    assert now is not None
    picked = policy.next_job(now, busy=1)
    assert picked is not None
    _complete(policy, *picked, now)  # a large window: more audio than the quiet bound
    end = stream.playback_end()
    assert end is not None
    wait = policy.next_release_s(now)
    # Due by the quiet bound, before its listener would have made it so.
    assert wait is not None and wait < min(settings.max_quiet_s, end - 3.0 - now)


def test_without_a_quiet_bound_a_stream_far_ahead_waits_for_its_listener() -> None:
    policy = SchedulingPolicy(SchedulerSettings(max_lead_s=2.0, max_quiet_s=None))
    stream = _ahead(policy)
    end = stream.playback_end()
    assert end is not None
    assert policy.next_release_s(0.0) == pytest.approx(end - 2.0)


# -- never idle: a property over arrivals ----------------------------------------------------------

_ARRIVAL = st.tuples(
    st.integers(0, 2),  # which stream
    st.sampled_from(["plain", "pair", "split"]),  # a segment; a lead with its takeover; apart
    st.floats(0.0, 6.0),  # how long after the stream's request before it arrives
    st.floats(0.0, 3.0),  # split: how long after its lead the takeover comes
    st.integers(20, 400),  # the segment's frames
)


def _speakable(stream: StreamState, now: float, max_lead_s: float) -> bool:
    """Whether ``stream`` has work it may render now: anything queued but a lead waiting for the
    rest of its sentence, unless its listener is ``max_lead_s`` ahead (render-ahead is bounded)."""
    if not stream.works or stream.held:
        return False
    end = stream.playback_end()
    if end is not None and end - now >= max_lead_s:
        return False
    head = stream.works[0]
    waiting_lead = head.request.lead and head.utterance is not None and not head.decided
    return not (waiting_lead and len(stream.works) < 2)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ARRIVAL, min_size=1, max_size=10))
def test_a_free_worker_is_never_left_idle_while_a_stream_has_text_it_may_speak(
    arrivals: list[tuple[int, str, float, float, int]],
) -> None:
    """One worker, three streams, segments arriving as a client sends them: whenever the
    worker finds no job, no stream has work it may render, and every stream's next job comes
    within the quiet bound of its last audio."""
    config = SchedulerSettings(max_lead_s=5.0)
    assert config.max_quiet_s is not None
    policy = SchedulingPolicy(config)
    streams = [policy.open_stream(lambda _event: None, CostModel()) for _ in range(3)]
    frames: dict[int, int] = {}
    pending: list[tuple[float, int, int, SegmentRequest]] = []  # (at, order, stream, request)
    free_at = [0.0, 0.0, 0.0]  # a stream's next request comes after its lead's takeover
    for number, (index, kind, gap, later, length) in enumerate(arrivals):
        tag, at = 2 * number, free_at[index] + gap
        frames[tag] = length
        if kind == "plain":
            request = SegmentRequest("Hello there.", "joe", VoiceSettings(), tag)
            pending.append((at, tag, index, request))
            free_at[index] = at
            continue
        lead, whole = _lead_pair(tag)
        free_at[index] = at + (later if kind == "split" else 0.0)
        pending.append((at, tag, index, lead))
        pending.append((free_at[index], tag + 1, index, whole))
        frames[tag + 1] = length + 20
    pending.sort()
    now = 0.0
    while pending or any(s.works for s in streams):
        while pending and pending[0][0] <= now:
            _, _, index, request = pending.pop(0)
            policy.submit(streams[index], request, now)
        picked = policy.next_job(now, busy=0)
        if picked is not None:
            stream, job = picked
            tag = job.work.request.tag
            if job.window is None:
                cost = 0.01
                policy.prepared(stream, job, blank_utterance(frames[tag]), cost, now + cost, False)
            else:
                cost = 0.0003 * (job.window[1] - job.window[0] + 20)
                audio = np.zeros((job.window[1] - job.window[0]) * SPF, dtype=np.float32)
                policy.rendered(stream, job, audio, cost, now + cost, False)
            now += cost
            continue
        for stream in streams:
            assert not _speakable(stream, now, config.max_lead_s), (now, stream.works)
            work = stream.runnable(Lane.MAIN)
            if work is not None and stream.quiet_since is not None:
                release = stream.timing(Lane.MAIN, work, now).release
                assert release <= stream.quiet_since + config.max_quiet_s
        wait = policy.next_release_s(now)
        upcoming = [
            t
            for t in (pending[0][0] if pending else None, None if wait is None else now + wait)
            if t is not None
        ]
        if not upcoming:
            break  # only leads waiting for takeovers that never come
        now = max(now, min(upcoming))
