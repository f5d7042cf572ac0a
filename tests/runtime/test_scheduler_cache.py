"""The scheduler with a phrase cache (runtime.scheduler, runtime.background): hits cut from the
cached audio, admitted misses recorded, prefetches and a takeover's head rendered in the
background. The real engine throughout."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from tests.support.wrapped_engine import WrappedEngine
from voxflow.engines.base import FloatArray, Utterance, VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.runtime import scheduler as scheduler_module
from voxflow.runtime.background import PREFETCH_CACHED, PREFETCH_RENDERED, BackgroundQueueFull
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

SENTENCE = "One moment, let me check that for you."
LONG = (
    "Your order left our warehouse this morning and should reach you by Thursday afternoon, "
    "unless the carrier runs late because of the holiday weekend traffic."
)


class CountingEngine(WrappedEngine):
    """The real engine; counts its calls."""

    def __init__(self, inner: PiperEngine) -> None:
        super().__init__(inner)
        self.prepares = 0
        self.renders = 0
        self.lock = threading.Lock()

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        with self.lock:
            self.prepares += 1
        return super().prepare(text, voice, settings, threads)

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray:
        with self.lock:
            self.renders += 1
        return super().render(utterance, start_frame, end_frame, threads)


class Stream:
    """One stream's events, collected by its sink."""

    def __init__(self, scheduler: Scheduler, requests: list[SegmentRequest]) -> None:
        self.events: list[SchedulerEvent] = []
        self.done = threading.Event()
        handle = scheduler.open_stream(self._sink)
        for request in requests:
            handle.submit(request)
        handle.close_input()
        assert self.done.wait(60), "the stream did not drain"

    def _sink(self, event: SchedulerEvent) -> None:
        self.events.append(event)
        if isinstance(event, Drained):
            self.done.set()

    def audio(self, tag: int) -> FloatArray:
        windows = [e for e in self.events if isinstance(e, Rendered) and e.tag == tag]
        return np.concatenate([w.audio for w in windows])

    def prepared(self, tag: int) -> Prepared:
        return next(e for e in self.events if isinstance(e, Prepared) and e.tag == tag)


@pytest.fixture
def counting(engine: PiperEngine) -> CountingEngine:
    return CountingEngine(engine)


@pytest.fixture
def cache() -> PhraseCache:
    return PhraseCache(CacheSettings())


@pytest.fixture
def scheduler(counting: CountingEngine, cache: PhraseCache) -> Iterator[Scheduler]:
    scheduler = Scheduler(counting, SchedulerSettings(workers=2), cache=cache)
    yield scheduler
    scheduler.shutdown()


def _request(text: str, tag: int = 0, seed: int | None = 5) -> SegmentRequest:
    return SegmentRequest(text, "joe", VoiceSettings(seed=seed), tag)


def test_a_hit_is_the_rendering_that_filled_it_sample_for_sample(
    scheduler: Scheduler, counting: CountingEngine, cache: PhraseCache
) -> None:
    first = Stream(scheduler, [_request(SENTENCE)])  # seen once: not kept
    assert cache.stats().stored == 0
    second = Stream(scheduler, [_request(SENTENCE)])  # seen twice: recorded and kept
    assert cache.stats().stored == 1
    calls = (counting.prepares, counting.renders)
    third = Stream(scheduler, [_request(SENTENCE)])
    assert (counting.prepares, counting.renders) == calls  # the engine did nothing
    assert third.prepared(0).cached and not second.prepared(0).cached
    assert np.array_equal(third.audio(0), second.audio(0))
    assert not first.prepared(0).cached
    assert cache.stats().hits[Tier.MEMORY] == 1
    # Word timings and frames are the engine's, so the session places them as for a miss.
    assert third.prepared(0).utterance.words == second.prepared(0).utterance.words


def test_a_hit_covers_the_frames_a_miss_renders(scheduler: Scheduler) -> None:
    Stream(scheduler, [_request(LONG)])
    second = Stream(scheduler, [_request(LONG)])
    third = Stream(scheduler, [_request(LONG)])
    assert third.prepared(0).cached

    def frames(stream: Stream) -> list[tuple[int, int, bool, bool]]:
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
        Stream(scheduler, [_request(SENTENCE, seed=seed)])
    assert cache.stats().stored == 1
    stream = Stream(scheduler, [_request(SENTENCE, seed=2)])
    assert not stream.prepared(0).cached  # seed 2 was seen once only: kept now
    assert cache.stats().stored == 2
    assert Stream(scheduler, [_request(SENTENCE, seed=1)]).prepared(0).cached


def test_a_prefetched_phrase_is_a_hit_on_its_first_request(
    scheduler: Scheduler, engine: PiperEngine
) -> None:
    assert scheduler.prefetch(_request(LONG)).result(60) == PREFETCH_RENDERED
    assert scheduler.prefetch(_request(LONG)).result(60) == PREFETCH_CACHED
    stream = Stream(scheduler, [_request(LONG)])
    assert stream.prepared(0).cached
    # Rendered in the background in windows of its own: equal to the whole rendering within
    # the streaming error (docs/architecture.md).
    utterance = engine.prepare(LONG, "joe", VoiceSettings(seed=5))
    start = stream.prepared(0).utterance.num_frames - utterance.num_frames
    assert start == 0
    whole = engine.render(utterance, 0, utterance.num_frames)
    hop = utterance.samples_per_frame
    first = next(e for e in stream.events if isinstance(e, Rendered)).start_frame
    streamed = stream.audio(0)
    reference = whole[first * hop :]
    assert streamed.shape == reference.shape
    error = np.linalg.norm(streamed - reference) / np.linalg.norm(reference)
    assert error < 1e-3


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

    Stream(scheduler, lead_and_takeover())
    Stream(scheduler, lead_and_takeover())  # the sentence's second request: admitted
    key = cache.key(counting, SENTENCE, "joe", VoiceSettings(seed=5))
    _wait_for(lambda: cache.contains(key))
    whole = Stream(scheduler, [_request(SENTENCE)])
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
    Stream(scheduler, _lead_and_takeover(SENTENCE))
    first = Stream(scheduler, _lead_and_takeover(SENTENCE))  # the lead's second time: kept
    lead_key = cache.key(counting, "One moment,", "joe", VoiceSettings(seed=5))
    _wait_for(lambda: cache.contains(lead_key))  # its tail, which the takeover spoke, rendered
    # Another reply with the same opening words: the lead is a hit, the sentence renders.
    other = "One moment, I will transfer you to our billing team."
    reply = Stream(scheduler, _lead_and_takeover(other))
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


def test_a_stream_that_becomes_due_goes_before_the_rest_of_a_prefetch(
    engine: PiperEngine,
) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=1), cache=PhraseCache(CacheSettings()))
    try:
        prefetch = scheduler.prefetch(_request(LONG * 3))
        stream = Stream(scheduler, [_request("Hello there.", seed=1)])
        # A background task yields between its steps: the stream drained first.
        assert not prefetch.done()
        assert prefetch.result(120) == PREFETCH_RENDERED
        assert stream.done.is_set()
    finally:
        scheduler.shutdown()


def test_a_full_background_queue_refuses_prefetches(
    scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduler_module, "MAX_BACKGROUND_TASKS", 0)
    future = scheduler.prefetch(_request(SENTENCE))
    with pytest.raises(BackgroundQueueFull):
        future.result(1)


def test_shutdown_fails_the_prefetches_still_waiting(engine: PiperEngine) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=1), cache=PhraseCache(CacheSettings()))
    futures = [scheduler.prefetch(_request(f"{LONG} {n}")) for n in range(5)]
    scheduler.shutdown()
    for future in futures:
        assert future.done()
    assert any(isinstance(f.exception(), RuntimeError) for f in futures)


def test_a_scheduler_without_a_cache_refuses_prefetches(engine: PiperEngine) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=1))
    try:
        with pytest.raises(RuntimeError, match="no phrase cache"):
            scheduler.prefetch(_request(SENTENCE))
    finally:
        scheduler.shutdown()


def _wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.02)


def test_a_hit_for_a_decoder_that_reads_a_burst_first_sends_the_burst_at_once(
    scheduler: Scheduler, engine: PiperEngine
) -> None:
    assert scheduler.prefetch(_request(LONG)).result(60) == PREFETCH_RENDERED
    events: list[SchedulerEvent] = []
    done = threading.Event()

    def sink(event: SchedulerEvent) -> None:
        events.append(event)
        if isinstance(event, Drained):
            done.set()

    handle = scheduler.open_stream(sink, burst_s=2.0)  # an MP3 client's FFmpeg, say
    handle.submit(_request(LONG))
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
        assert scheduler.prefetch(_request(LONG)).result(60) == PREFETCH_RENDERED
        stream = scheduler.open_stream(lambda event: None)
        state = scheduler._policy.streams[stream.id]
        stream.submit(_request(LONG))  # text stage and first window, here and now
        work = state.works[0]
        assert work.started and work.phrase is not None
        timing = state.timing(Lane.MAIN, work, now[0])
        assert timing.release >= now[0] + HIT_REST_AFTER_S
        stream.cancel()
    finally:
        scheduler.shutdown()
