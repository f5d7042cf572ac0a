"""The scheduler's leads and takeovers, with the real voice: where the switch lands, what each
side renders, and what happens when either side is early or late."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.scheduler_sinks import Recorder
from tests.support.wrapped_engine import WrappedEngine
from voxflow.engines.base import Utterance, VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.runtime.handover import frame_at
from voxflow.runtime.jobs import Prepared, Rendered, SegmentRequest, Takeover
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.session.pieces import switch_points
from voxflow.text.normalize.normalizer import Normalized

LEAD = "I can definitely help you reschedule"
WHOLE = (
    "I can definitely help you reschedule your appointment to next Tuesday afternoon if that "
    "works better for you."
)
SETTINGS = VoiceSettings(seed=3)


def _pair() -> tuple[SegmentRequest, SegmentRequest]:
    points = switch_points(Normalized.identity(LEAD), Normalized.identity(WHOLE))
    lead = SegmentRequest(LEAD, "joe", SETTINGS, 0, lead=True)
    whole = SegmentRequest(WHOLE, "joe", SETTINGS, 1, takeover=Takeover(0, points))
    return lead, whole


class SlowEngine(WrappedEngine):
    """The real engine; the text stage of chosen texts starts only after an event is set, so a
    test can decide which of two concurrent text stages finishes first."""

    def __init__(self, inner: PiperEngine, held: str) -> None:
        super().__init__(inner)
        self.held = held
        self.release = threading.Event()

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        if text == self.held:
            assert self.release.wait(30)
        return super().prepare(text, voice, settings, threads)


@pytest.fixture
def scheduler(engine: PiperEngine) -> Iterator[Scheduler]:
    scheduler = Scheduler(engine, SchedulerSettings(workers=2))
    yield scheduler
    scheduler.shutdown()


def _windows(events: list[object], tag: int) -> list[Rendered]:
    return [e for e in events if isinstance(e, Rendered) and e.tag == tag]


def _utterance(events: list[object], tag: int) -> Utterance:
    [prepared] = [e for e in events if isinstance(e, Prepared) and e.tag == tag]
    return prepared.utterance


def _spoken_words(events: list[object]) -> list[str]:
    """The words the listener hears: the lead's up to its last window, then the takeover's."""
    lead_windows, whole_windows = _windows(events, 0), _windows(events, 1)
    lead_start, lead_end = lead_windows[0].start_frame, lead_windows[-1].end_frame
    start = whole_windows[0].start_frame + whole_windows[0].splice_frames
    heard = []
    if lead_end > lead_start:
        heard += [w.word for w in _utterance(events, 0).words if w.start_frame < lead_end]
    heard += [w.word for w in _utterance(events, 1).words if w.start_frame >= start]
    return heard


def _check_contiguous(windows: list[Rendered], end: int) -> None:
    assert windows[0].first and windows[-1].last
    assert not any(w.first for w in windows[1:]) and not any(w.last for w in windows[:-1])
    for before, after in itertools.pairwise(windows):
        assert before.end_frame == after.start_frame
    assert windows[-1].end_frame == end


def test_the_takeover_continues_where_the_lead_stops(scheduler: Scheduler) -> None:
    recorder = Recorder()
    stream = scheduler.open_stream(recorder.sink("a"))
    lead, whole = _pair()
    stream.submit(lead)
    stream.submit(whole)
    stream.close_input()
    assert recorder.done.wait(60)
    events: list[object] = list(recorder.of("a"))
    # Every word of the sentence is heard once, in order, whatever the switch point was.
    assert _spoken_words(events) == WHOLE.rstrip(".").split()
    whole_windows = _windows(events, 1)
    _check_contiguous(whole_windows, _utterance(events, 1).num_frames)
    lead_windows = _windows(events, 0)
    if lead_windows[-1].end_frame > lead_windows[0].start_frame:
        _check_contiguous(lead_windows, lead_windows[-1].end_frame)
        # A switch inside the lead cross-fades one frame; at the lead's end it does not.
        spliced = lead_windows[-1].end_frame < _utterance(events, 0).num_frames
        assert lead_windows[-1].continues == spliced
        assert whole_windows[0].splice_frames == (1 if spliced else 0)
    # The takeover starts at a word: its first heard frame is one of its words' starts.
    start = whole_windows[0].start_frame + whole_windows[0].splice_frames
    words = _utterance(events, 1).words
    assert start in {w.start_frame for w in words} or start < words[0].start_frame


def test_a_takeover_waits_for_its_leads_first_window(engine: PiperEngine) -> None:
    slow = SlowEngine(engine, LEAD)
    scheduler = Scheduler(slow, SchedulerSettings(workers=2))
    try:
        recorder = Recorder()
        stream = scheduler.open_stream(recorder.sink("a"))
        lead, whole = _pair()
        stream.submit(lead)
        stream.submit(whole)
        stream.close_input()
        time.sleep(0.5)
        # The lead's text stage is held: the takeover's has not started beside it, so the lead
        # gets the machine to itself on the way to the first audio.
        assert not any(isinstance(e, Prepared) for e in recorder.of("a"))
        slow.release.set()
        assert recorder.done.wait(60)
        events: list[object] = list(recorder.of("a"))
        first_window = next(i for i, e in enumerate(events) if isinstance(e, Rendered))
        takeover = next(i for i, e in enumerate(events) if isinstance(e, Prepared) and e.tag == 1)
        assert first_window < takeover
        assert _spoken_words(events) == WHOLE.rstrip(".").split()
    finally:
        slow.release.set()
        scheduler.shutdown()


def test_a_takeover_after_the_lead_has_ended_starts_at_the_next_word(
    scheduler: Scheduler,
) -> None:
    recorder = Recorder()
    stream = scheduler.open_stream(recorder.sink("a"))
    lead, whole = _pair()
    stream.submit(lead)
    deadline = time.monotonic() + 30
    while not any(isinstance(e, Rendered) and e.last for e in recorder.of("a")):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    stream.submit(whole)
    stream.close_input()
    assert recorder.done.wait(60)
    events: list[object] = list(recorder.of("a"))
    lead_windows = _windows(events, 0)
    assert lead_windows[-1].end_frame == _utterance(events, 0).num_frames
    assert not lead_windows[-1].continues
    first = _windows(events, 1)[0]
    assert first.splice_frames == 0
    assert first.start_frame == frame_at(_utterance(events, 1), WHOLE.index("your"))
    assert _spoken_words(events) == WHOLE.rstrip(".").split()


def test_a_lead_is_rendered_only_a_little_ahead_until_its_takeover_comes(
    engine: PiperEngine,
) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=2, lead_hold_s=0.3))
    try:
        recorder = Recorder()
        stream = scheduler.open_stream(recorder.sink("a"))
        long_lead = SegmentRequest(WHOLE + " " + WHOLE, "joe", SETTINGS, 0, lead=True)
        started = time.monotonic()
        stream.submit(long_lead)
        time.sleep(1.0)
        elapsed = time.monotonic() - started
        audio_s = sum(len(e.audio) / 22050 for e in recorder.of("a") if isinstance(e, Rendered))
        # The lead is ~12 s of audio; held, it stays within the hold (plus one window).
        assert 0 < audio_s <= elapsed + 0.3 + 256 * 256 / 22050
        stream.cancel()
    finally:
        scheduler.shutdown()


def test_an_unpaced_stream_renders_past_the_lead_cap(engine: PiperEngine) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=2, max_lead_s=0.3))
    try:
        recorder = Recorder()
        paced = scheduler.open_stream(recorder.sink("paced"))
        unpaced = scheduler.open_stream(recorder.sink("free"), paced=False)
        for stream in (paced, unpaced):
            stream.submit(SegmentRequest(WHOLE + " " + WHOLE, "joe", SETTINGS, 0))
            stream.close_input()
        assert recorder.done.wait(60)
        deadline = time.monotonic() + 30
        while not any(isinstance(e, Rendered) and e.last for e in recorder.of("free")):
            assert time.monotonic() < deadline
            time.sleep(0.01)

        def rendered_s(name: str) -> float:
            return sum(len(e.audio) / 22050 for e in recorder.of(name) if isinstance(e, Rendered))

        # The unpaced stream finished all of its ~12 s while the paced one kept near playback.
        assert rendered_s("free") > 2 * rendered_s("paced")
        paced.cancel()
    finally:
        scheduler.shutdown()


def test_a_burst_is_rendered_before_a_lead_is_held(engine: PiperEngine) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=2, lead_hold_s=0.3))
    try:
        recorder = Recorder()
        stream = scheduler.open_stream(recorder.sink("a"), burst_s=2.0)
        long_lead = SegmentRequest(WHOLE + " " + WHOLE, "joe", SETTINGS, 0, lead=True)
        stream.submit(long_lead)
        deadline = time.monotonic() + 30
        rendered = 0.0
        while rendered < 2.0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
            rendered = sum(
                len(e.audio) / 22050 for e in recorder.of("a") if isinstance(e, Rendered)
            )
        # Without the burst, the held lead stays within 0.3 s of playback for a while (see
        # test_a_lead_is_rendered_only_a_little_ahead_until_its_takeover_comes).
        windows = [e for e in recorder.of("a") if isinstance(e, Rendered)]
        assert len(windows) <= 3  # a small first window, then the rest of the burst at once
        stream.cancel()
    finally:
        scheduler.shutdown()
