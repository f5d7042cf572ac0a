"""The scheduler's lane queue: released lanes by deadline, sleeping ones by release time, and
stale entries (a requeued lane, a cancelled stream) skipped."""

from __future__ import annotations

from voxflow.engines.base import VoiceSettings
from voxflow.runtime.costs import initial_costs
from voxflow.runtime.jobs import SegmentRequest
from voxflow.runtime.lane_queue import LaneQueue
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.runtime.stream import StreamState
from voxflow.runtime.work import Lane


def _stream(stream_id: int) -> StreamState:
    """A stream with one segment to prepare: its main lane has work."""
    s = SchedulerSettings()
    stream = StreamState(
        stream_id,
        lambda _event: None,
        True,
        s.windows,
        initial_costs("piper"),
        s.first_audio_s,
        s.max_lead_s,
        s.lead_hold_s,
    )
    stream.submit(SegmentRequest("Hello.", "joe", VoiceSettings(), 0), 0.0)
    return stream


def _ids(queue: LaneQueue, now: float) -> list[int]:
    out = []
    while (popped := queue.pop(now)) is not None:
        out.append(popped[0].id)
    return out


def test_released_lanes_come_out_by_deadline_ties_first_in_first_out() -> None:
    queue = LaneQueue()
    for stream_id, deadline in ((1, 3.0), (2, 1.0), (3, 2.0), (4, 1.0)):
        queue.push(_stream(stream_id), Lane.MAIN, 0.0, deadline, 0.0)
    assert queue.ready_streams() == 4 and queue.any_ready()
    assert _ids(queue, 0.0) == [2, 4, 3, 1]
    assert queue.pop(0.0) is None and not queue.any_ready()


def test_a_sleeping_lane_waits_for_its_release_whatever_its_deadline() -> None:
    queue = LaneQueue()
    queue.push(_stream(1), Lane.MAIN, 5.0, 0.5, 0.0)  # due first, released later
    queue.push(_stream(2), Lane.MAIN, 0.0, 9.0, 0.0)
    assert queue.next_release_s(1.0) == 4.0
    assert queue.ready_streams() == 1
    assert _ids(queue, 1.0) == [2]
    assert _ids(queue, 5.0) == [1]
    assert queue.next_release_s(5.0) is None


def test_a_requeued_lane_comes_out_once_and_a_cancelled_stream_never() -> None:
    queue = LaneQueue()
    moved, gone, kept = _stream(1), _stream(2), _stream(3)
    queue.push(moved, Lane.MAIN, 0.0, 1.0, 0.0)
    moved.versions[Lane.MAIN] += 1  # requeued: the first entry is stale
    queue.push(moved, Lane.MAIN, 0.0, 3.0, 0.0)
    queue.push(gone, Lane.MAIN, 0.0, 2.0, 0.0)
    queue.push(kept, Lane.MAIN, 0.0, 4.0, 0.0)
    gone.cancel()
    assert queue.ready_streams() == 2
    popped = queue.pop(0.0)
    assert popped is not None and popped[0] is moved and popped[1] is Lane.MAIN
    assert popped[2] is moved.works[0]  # the work the lane runs next
    assert _ids(queue, 0.0) == [3]


def test_a_lane_without_work_is_skipped() -> None:
    queue = LaneQueue()
    idle = _stream(1)
    queue.push(idle, Lane.AHEAD, 0.0, 1.0, 0.0)  # nothing to take over: no work on that lane
    assert not queue.any_ready() and queue.pop(0.0) is None


def test_compacting_drops_what_cancelled_streams_left_only_when_it_dominates() -> None:
    queue = LaneQueue()
    streams = [_stream(i) for i in range(200)]  # 100 asleep, 100 released
    for i, stream in enumerate(streams):
        queue.push(stream, Lane.MAIN, 0.0 if i % 2 else 10.0, float(i), 0.0)
    for stream in streams[:190]:
        stream.cancel()
    queue.compact(live_streams=30)  # 100 entries a heap, not over four times 30: left alone
    assert len(queue._ready) == len(queue._sleeping) == 100
    queue.compact(live_streams=10)
    assert len(queue._ready) == len(queue._sleeping) == 5
    assert _ids(queue, 10.0) == list(range(190, 200))
