"""The phrase cache as a stage of the scheduler's jobs (runtime.cache.stage): hits cut from the
cached audio with the hit's own window rules, admitted misses recorded and kept (a takeover's
with the head a background fill renders), and the stage's state released with its works. The
real engine throughout."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from tests.support.cached_phrases import LONG, SENTENCE, phrase_request
from tests.support.counting_engine import CountingEngine
from tests.support.scheduler_sinks import DrainedStream
from voxflow.engines.base import FloatArray, Utterance, VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.runtime.cache.background import PREFETCH_RENDERED
from voxflow.runtime.cache.phrase_cache import CacheSettings, PhraseCache, Tier
from voxflow.runtime.jobs import (
    Drained,
    Prepared,
    Rendered,
    SchedulerEvent,
    SegmentRequest,
    Takeover,
)
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.runtime.stream import HIT_FIRST_FRAMES, HIT_REST_AFTER_S
from voxflow.runtime.work import Lane


def test_a_hit_is_the_rendering_that_filled_it_sample_for_sample(
    scheduler: Scheduler, counting: CountingEngine, cache: PhraseCache
) -> None:
    first = DrainedStream(scheduler, [phrase_request(SENTENCE)])  # seen once: not kept
    assert cache.stats().stored == 0
    second = DrainedStream(scheduler, [phrase_request(SENTENCE)])  # seen twice: recorded and kept
    assert cache.stats().stored == 1
    calls = (counting.prepares, counting.renders)
    third = DrainedStream(scheduler, [phrase_request(SENTENCE)])
    assert (counting.prepares, counting.renders) == calls  # the engine did nothing
    assert third.prepared(0).cached and not second.prepared(0).cached
    assert np.array_equal(third.audio(0), second.audio(0))
    assert not first.prepared(0).cached
    assert cache.stats().hits[Tier.MEMORY] == 1
    # Word timings and frames are the engine's, so the session places them as for a miss.
    assert third.prepared(0).utterance.words == second.prepared(0).utterance.words


def test_a_hit_covers_the_frames_a_miss_renders(scheduler: Scheduler) -> None:
    DrainedStream(scheduler, [phrase_request(LONG)])
    second = DrainedStream(scheduler, [phrase_request(LONG)])
    third = DrainedStream(scheduler, [phrase_request(LONG)])
    assert third.prepared(0).cached

    def frames(stream: DrainedStream) -> list[tuple[int, int, bool, bool]]:
        return [
            (e.start_frame, e.end_frame, e.first, e.last)
            for e in stream.events
            if isinstance(e, Rendered)
        ]

    # The same frames from the same first frame; a hit's first window is a short one (its
    # encoding is what the listener waits for). Later windows differ with timing; the samples
    # never do.
    assert frames(third)[0][0] == frames(second)[0][0]
    assert frames(third)[0][1] - frames(third)[0][0] == HIT_FIRST_FRAMES
    assert frames(third)[-1][1] == frames(second)[-1][1]
    assert np.array_equal(third.audio(0), second.audio(0))


def test_settings_that_change_the_audio_are_other_phrases(
    scheduler: Scheduler, cache: PhraseCache
) -> None:
    for seed in (1, 1, 2):
        DrainedStream(scheduler, [phrase_request(SENTENCE, seed=seed)])
    assert cache.stats().stored == 1
    stream = DrainedStream(scheduler, [phrase_request(SENTENCE, seed=2)])
    assert not stream.prepared(0).cached  # seed 2 was seen once only: kept now
    assert cache.stats().stored == 2
    assert DrainedStream(scheduler, [phrase_request(SENTENCE, seed=1)]).prepared(0).cached


def test_a_takeovers_recording_gets_its_head_and_the_whole_sentence_is_kept(
    scheduler: Scheduler, cache: PhraseCache, counting: CountingEngine
) -> None:
    lead_text = "One moment,"
    points = ((0, 0), (4, 4), (len(lead_text), len(lead_text)))

    def lead_and_takeover() -> list[SegmentRequest]:
        lead = SegmentRequest(lead_text, "joe", VoiceSettings(seed=5), 0, lead=True)
        takeover = SegmentRequest(
            SENTENCE, "joe", VoiceSettings(seed=5), 1, takeover=Takeover(0, points)
        )
        return [lead, takeover]

    DrainedStream(scheduler, lead_and_takeover())
    DrainedStream(scheduler, lead_and_takeover())  # the sentence's second request: admitted
    key = cache.key(counting, SENTENCE, "joe", VoiceSettings(seed=5))
    _wait_for(lambda: cache.contains(key))
    whole = DrainedStream(scheduler, [phrase_request(SENTENCE)])
    assert whole.prepared(0).cached
    audio = whole.audio(0)
    # The head (rendered in the background) and the takeover's windows make one utterance.
    utterance = counting.inner.prepare(SENTENCE, "joe", VoiceSettings(seed=5))
    reference = counting.inner.render(utterance, 0, utterance.num_frames)
    first = next(e for e in whole.events if isinstance(e, Rendered)).start_frame
    reference = reference[first * utterance.samples_per_frame :]
    assert audio.shape == reference.shape
    assert np.linalg.norm(audio - reference) / np.linalg.norm(reference) < 1e-3


def _lead_and_takeover(sentence: str, lead_text: str = "One moment,") -> list[SegmentRequest]:
    points = ((0, 0), (4, 4), (len(lead_text), len(lead_text)))
    lead = SegmentRequest(lead_text, "joe", VoiceSettings(seed=5), 0, lead=True)
    takeover = SegmentRequest(
        sentence, "joe", VoiceSettings(seed=5), 1, takeover=Takeover(0, points)
    )
    return [lead, takeover]


def test_a_reply_that_opens_like_an_earlier_one_starts_from_its_cached_lead(
    scheduler: Scheduler, cache: PhraseCache, counting: CountingEngine
) -> None:
    DrainedStream(scheduler, _lead_and_takeover(SENTENCE))
    first = DrainedStream(scheduler, _lead_and_takeover(SENTENCE))  # the lead's second time: kept
    lead_key = cache.key(counting, "One moment,", "joe", VoiceSettings(seed=5))
    _wait_for(lambda: cache.contains(lead_key))  # its tail, which the takeover spoke, rendered
    # Another reply with the same opening words: the lead is a hit, the sentence renders.
    other = "One moment, I will transfer you to our billing team."
    reply = DrainedStream(scheduler, _lead_and_takeover(other))
    assert reply.prepared(0).cached and not reply.prepared(1).cached
    # The lead's audio is the one rendered before, as far as it was heard this time...
    lead_audio, heard_before = reply.audio(0), first.audio(0)
    shared = min(len(lead_audio), len(heard_before))
    assert shared > 0 and np.array_equal(lead_audio[:shared], heard_before[:shared])
    # ...and the sentence takes over from it as from any lead: at a word, cross-faded.
    lead_windows = [e for e in reply.events if isinstance(e, Rendered) and e.tag == 0]
    takeover_windows = [e for e in reply.events if isinstance(e, Rendered) and e.tag == 1]
    assert takeover_windows and takeover_windows[0].first
    if lead_windows[-1].continues:
        assert takeover_windows[0].splice_frames == 1


def _wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.02)


def test_a_hit_for_a_decoder_that_reads_a_burst_first_sends_the_burst_at_once(
    scheduler: Scheduler, engine: PiperEngine
) -> None:
    assert scheduler.prefetch(phrase_request(LONG)).result(60) == PREFETCH_RENDERED
    events: list[SchedulerEvent] = []
    done = threading.Event()

    def sink(event: SchedulerEvent) -> None:
        events.append(event)
        if isinstance(event, Drained):
            done.set()

    handle = scheduler.open_stream(sink, burst_s=2.0)  # an MP3 client's FFmpeg, say
    handle.submit(phrase_request(LONG))
    handle.close_input()
    assert done.wait(60)
    first = next(e for e in events if isinstance(e, Rendered))
    utterance = next(e for e in events if isinstance(e, Prepared)).utterance
    seconds = (first.end_frame - first.start_frame) * utterance.samples_per_frame
    assert seconds / utterance.sample_rate >= 2.0  # not the short first window of a hit


def test_a_hits_later_windows_wait_a_moment_after_its_first(engine: PiperEngine) -> None:
    now = [100.0]
    cache = PhraseCache(CacheSettings())
    scheduler = Scheduler(engine, SchedulerSettings(workers=1), clock=lambda: now[0], cache=cache)
    try:
        assert scheduler.prefetch(phrase_request(LONG)).result(60) == PREFETCH_RENDERED
        stream = scheduler.open_stream(lambda event: None)
        state = scheduler._policy.streams[stream.id]
        stream.submit(phrase_request(LONG))  # text stage and first window, here and now
        work = state.works[0]
        assert work.started and work.cached
        timing = state.timing(Lane.MAIN, work, now[0])
        assert timing.release >= now[0] + HIT_REST_AFTER_S
        stream.cancel()
    finally:
        scheduler.shutdown()


# -- the stage's state ends with its works -------------------------------------------------------


def _stage_holds(scheduler: Scheduler) -> int:
    stage = scheduler._stage
    assert stage is not None
    return stage.works_held


def _idle(scheduler: Scheduler) -> None:
    _wait_for(lambda: scheduler.stats().busy_workers == 0)


def test_the_stage_holds_nothing_once_its_streams_drain(scheduler: Scheduler) -> None:
    for _ in range(3):  # a miss, an admitted miss (recorded and kept), a hit
        DrainedStream(scheduler, [phrase_request(SENTENCE)])
        assert _stage_holds(scheduler) == 0
    for _ in range(3):  # a lead and its takeover: kept, with the fill of what each lacks
        DrainedStream(scheduler, _lead_and_takeover(LONG))
        assert _stage_holds(scheduler) == 0


def test_a_cancelled_stream_leaves_nothing_in_the_stage(engine: PiperEngine) -> None:
    # The listener's clock stands still: a stream renders until it is half a second ahead,
    # then waits, with its work in the middle.
    now = [100.0]
    cache = PhraseCache(CacheSettings())
    settings = SchedulerSettings(workers=1, max_lead_s=0.5)
    scheduler = Scheduler(engine, settings, clock=lambda: now[0], cache=cache)
    try:
        cache.lookup(cache.key(engine, LONG, "joe", VoiceSettings(seed=5)))  # seen once
        rendered = threading.Event()

        def sink(event: SchedulerEvent) -> None:
            if isinstance(event, Rendered):
                rendered.set()

        recorded = scheduler.open_stream(sink)
        recorded.submit(phrase_request(LONG))  # its second request: recorded as it renders
        assert rendered.wait(30)
        assert _stage_holds(scheduler) == 1
        recorded.cancel()
        assert _stage_holds(scheduler) == 0

        assert scheduler.prefetch(phrase_request(SENTENCE)).result(60) == PREFETCH_RENDERED
        hit = scheduler.open_stream(lambda event: None)
        hit.submit(phrase_request(SENTENCE))  # its first window is cut here and now; the rest waits
        assert _stage_holds(scheduler) == 1
        hit.cancel()
        assert _stage_holds(scheduler) == 0
    finally:
        scheduler.shutdown()


class _GatedEngine(CountingEngine):
    """Its text stages (``step="prepare"``) or windows (``"render"``) wait while ``gate`` is
    clear; ``waiting`` is set once one does."""

    def __init__(self, inner: PiperEngine, step: str) -> None:
        super().__init__(inner)
        self.step = step
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        if self.step == "prepare":
            self._wait()
        return super().prepare(text, voice, settings, threads)

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray:
        if self.step == "render":
            self._wait()
        return super().render(utterance, start_frame, end_frame, threads)

    def _wait(self) -> None:
        self.waiting.set()
        assert self.gate.wait(30)


@pytest.mark.parametrize("step", ["prepare", "render"])
def test_a_job_that_ends_after_its_stream_was_cancelled_leaves_nothing_in_the_stage(
    engine: PiperEngine, step: str
) -> None:
    gated = _GatedEngine(engine, step)
    cache = PhraseCache(CacheSettings())
    scheduler = Scheduler(gated, SchedulerSettings(workers=1), cache=cache)
    try:
        cache.lookup(cache.key(gated, SENTENCE, "joe", VoiceSettings(seed=5)))  # seen once
        gated.gate.clear()
        stream = scheduler.open_stream(lambda event: None)
        stream.submit(phrase_request(SENTENCE))  # an admitted miss
        assert gated.waiting.wait(30)
        # Looked up; in its text stage, or its first window with its recording started.
        assert _stage_holds(scheduler) == (1 if step == "render" else 0)
        stream.cancel()
        assert _stage_holds(scheduler) == 0
        gated.gate.set()
        _idle(scheduler)
        assert _stage_holds(scheduler) == 0 and cache.stats().stored == 0
    finally:
        gated.gate.set()
        scheduler.shutdown()
