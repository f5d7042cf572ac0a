from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from tests.support.scheduler_sinks import Recorder
from tests.support.wrapped_engine import WrappedEngine
from voxflow.engines.base import FloatArray, Utterance, VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.runtime.jobs import Drained, Failed, Prepared, Rendered, SegmentRequest
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget."
)


@pytest.fixture
def scheduler(engine: PiperEngine) -> Iterator[Scheduler]:
    scheduler = Scheduler(engine, SchedulerSettings(workers=2))
    yield scheduler
    scheduler.shutdown()


def _request(text: str, tag: int, seed: int = 5) -> SegmentRequest:
    return SegmentRequest(text, "joe", VoiceSettings(seed=seed), tag)


def test_segments_come_out_in_order_and_match_the_whole_render(
    scheduler: Scheduler, engine: PiperEngine
) -> None:
    recorder = Recorder()
    stream = scheduler.open_stream(recorder.sink("a"))
    stream.submit(_request("Hello there.", 0))
    stream.submit(_request(LONG, 1))
    stream.close_input()
    assert recorder.done.wait(30)
    events = recorder.of("a")
    assert isinstance(events[0], Prepared) and events[0].tag == 0
    assert isinstance(events[-1], Drained)
    tags = [e.tag for e in events if isinstance(e, Prepared | Rendered)]
    assert tags == sorted(tags)
    for tag, text in ((0, "Hello there."), (1, LONG)):
        windows = [e for e in events if isinstance(e, Rendered) and e.tag == tag]
        assert windows[-1].last and not any(w.last for w in windows[:-1])
        streamed = np.concatenate([w.audio for w in windows])
        utterance = engine.prepare(text, "joe", VoiceSettings(seed=5))
        whole = engine.render(utterance, 0, utterance.num_frames)
        # Rendering starts a few frames before the first word: the silence before is skipped.
        start = windows[0].start_frame
        assert start == max(0, utterance.words[0].start_frame - utterance.onset_frames)
        whole = whole[start * utterance.samples_per_frame :]
        assert np.linalg.norm(streamed - whole) / np.linalg.norm(whole) < 1e-3


def test_windows_start_small_and_grow_while_ahead(scheduler: Scheduler) -> None:
    recorder = Recorder()
    stream = scheduler.open_stream(recorder.sink("a"))
    stream.submit(_request(LONG, 0))
    stream.close_input()
    assert recorder.done.wait(30)
    sizes = [e.end_frame - e.start_frame for e in recorder.of("a") if isinstance(e, Rendered)]
    assert sizes[0] == 16
    assert max(sizes) >= 64
    assert sizes[1] >= sizes[0]


def test_a_new_streams_first_window_jumps_ahead_of_a_stream_with_audio_in_hand(
    engine: PiperEngine,
) -> None:
    settings = SchedulerSettings(workers=1, max_window_frames=32, first_audio_workers=0)
    scheduler = Scheduler(engine, settings)
    try:
        recorder = Recorder()
        busy = scheduler.open_stream(recorder.sink("busy"))
        busy.submit(_request(LONG * 3, 0))
        while sum(isinstance(e, Rendered) for e in recorder.of("busy")) < 3:
            time.sleep(0.005)
        fresh = scheduler.open_stream(recorder.sink("fresh"))
        fresh.submit(_request("Hi!", 0))
        deadline = time.monotonic() + 20
        while not any(isinstance(e, Rendered) for e in recorder.of("fresh")):
            assert time.monotonic() < deadline
            time.sleep(0.002)
        with recorder.lock:
            order = [name for name, _ in recorder.events]
        first_fresh = order.index("fresh")
        busy_before = order[:first_fresh].count("busy")
        busy_until_audio = order[: order.index("fresh", first_fresh + 1) + 1].count("busy")
        # Only the window already in flight when "fresh" arrived may finish in between.
        assert busy_until_audio - busy_before <= 0
        assert busy_before <= 3 + 1 + 1  # 3 seen + Prepared + the in-flight window
        busy.cancel()
    finally:
        scheduler.shutdown()


class HeldEngine(WrappedEngine):
    """The real engine, but a window of ``LONG`` (the busy stream's text) takes a second more:
    a job in flight that will not end soon."""

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray:
        if utterance.text.startswith(LONG[:20]):
            time.sleep(1.0)
        return super().render(utterance, start_frame, end_frame, threads)


@pytest.mark.parametrize("first_audio_workers", [0, 1])
def test_a_first_audio_worker_starts_a_new_stream_beside_a_window_in_flight(
    engine: PiperEngine, first_audio_workers: int
) -> None:
    settings = SchedulerSettings(workers=1, first_audio_workers=first_audio_workers)
    scheduler = Scheduler(HeldEngine(engine), settings)
    try:
        recorder = Recorder()
        busy = scheduler.open_stream(recorder.sink("busy"))
        busy.submit(_request(LONG, 0))
        while not any(isinstance(e, Rendered) for e in recorder.of("busy")):
            time.sleep(0.005)
        time.sleep(0.05)  # the worker holds the busy stream's next window now
        windows = sum(isinstance(e, Rendered) for e in recorder.of("busy"))
        fresh = scheduler.open_stream(recorder.sink("fresh"))
        fresh.submit(_request("Hi!", 0))
        deadline = time.monotonic() + 20
        while not any(isinstance(e, Rendered) for e in recorder.of("fresh")):
            assert time.monotonic() < deadline
            time.sleep(0.002)
        waited = sum(isinstance(e, Rendered) for e in recorder.of("busy")) - windows
        # With a first-audio worker, "Hi!" is heard while the held window is still in flight;
        # without one it waits for that window to end.
        assert waited == (0 if first_audio_workers else 1)
        busy.cancel()
    finally:
        scheduler.shutdown()


def test_no_event_after_cancel_returns(scheduler: Scheduler) -> None:
    recorder = Recorder()
    stream = scheduler.open_stream(recorder.sink("a"))
    stream.submit(_request(LONG, 0))
    stream.submit(_request(LONG, 1))
    stream.close_input()
    while not any(isinstance(e, Rendered) for e in recorder.of("a")):
        time.sleep(0.002)
    stream.cancel()
    seen = len(recorder.of("a"))
    time.sleep(0.3)
    assert len(recorder.of("a")) == seen
    assert not any(isinstance(e, Drained) for e in recorder.of("a"))
    assert scheduler.stats().active_streams == 0


class FailingEngine(WrappedEngine):
    """The real engine, except that one text fails in the text stage."""

    def __init__(self, inner: PiperEngine) -> None:
        super().__init__(inner)

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        if text == "explode":
            raise RuntimeError("text stage failed")
        return super().prepare(text, voice, settings, threads)


def test_a_failed_segment_is_reported_and_the_stream_goes_on(engine: PiperEngine) -> None:
    scheduler = Scheduler(FailingEngine(engine), SchedulerSettings(workers=1))
    try:
        recorder = Recorder()
        stream = scheduler.open_stream(recorder.sink("a"))
        stream.submit(_request("explode", 0))
        stream.submit(_request("Still here.", 1))
        stream.close_input()
        assert recorder.done.wait(30)
        events = recorder.of("a")
        failures = [e for e in events if isinstance(e, Failed)]
        assert len(failures) == 1 and failures[0].tag == 0
        assert "text stage failed" in str(failures[0].error)
        assert any(isinstance(e, Rendered) and e.tag == 1 and e.last for e in events)
    finally:
        scheduler.shutdown()


def test_streams_far_ahead_wait(engine: PiperEngine) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=2, max_lead_s=0.3))
    try:
        recorder = Recorder()
        stream = scheduler.open_stream(recorder.sink("a"))
        started = time.monotonic()
        stream.submit(_request(LONG * 2, 0))
        time.sleep(0.6)
        elapsed = time.monotonic() - started
        audio_s = sum(len(e.audio) / 22050 for e in recorder.of("a") if isinstance(e, Rendered))
        # Unthrottled it would have rendered ~10 s of audio by now.
        assert audio_s <= elapsed + 0.3 + 256 * 256 / 22050
        stream.cancel()
    finally:
        scheduler.shutdown()


def test_shutdown_stops_the_worker_threads(engine: PiperEngine) -> None:
    # The threads this scheduler started, by identity: other tests' threads may come and go in
    # this process meanwhile (the shared server's), so the process's count says nothing.
    before = set(threading.enumerate())
    scheduler = Scheduler(engine, SchedulerSettings(workers=3, first_audio_workers=1))
    started = [
        t for t in threading.enumerate() if t not in before and t.name.startswith("voxflow-")
    ]
    assert len(started) == 3 + 1
    scheduler.shutdown()
    assert not any(thread.is_alive() for thread in started)
    with pytest.raises(RuntimeError, match="shut down"):
        scheduler.open_stream(lambda event: None)


class ThreadsEngine(WrappedEngine):
    """The real engine; remembers the threads each job was allowed."""

    def __init__(self, inner: PiperEngine) -> None:
        super().__init__(inner)
        self.calls: list[tuple[str, int | None]] = []

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        self.calls.append(("prepare", threads))
        return super().prepare(text, voice, settings, threads)

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray:
        self.calls.append(("render", threads))
        return super().render(utterance, start_frame, end_frame, threads)


def test_a_lone_streams_first_audio_may_use_every_core(engine: PiperEngine) -> None:
    wrapped = ThreadsEngine(engine)
    scheduler = Scheduler(wrapped, SchedulerSettings(workers=2, wide_threads=2))
    try:
        recorder = Recorder()
        stream = scheduler.open_stream(recorder.sink("a"))
        stream.submit(_request(LONG, 0))
        stream.close_input()
        assert recorder.done.wait(30)
        # The text stage and the first window are on the way to the first audio with nothing
        # else to run; later windows are not.
        assert wrapped.calls[:2] == [("prepare", 2), ("render", 2)]
        assert all(threads is None for _, threads in wrapped.calls[2:])
    finally:
        scheduler.shutdown()
