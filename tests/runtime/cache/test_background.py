"""The phrase cache's background work (runtime.cache.background) on a scheduler's spare workers:
prefetches, a bounded queue, a stream that becomes due going first, and shutdown."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.cached_phrases import LONG, SENTENCE, phrase_request
from tests.support.scheduler_sinks import DrainedStream
from voxflow.engines.base import VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.runtime.cache import background as background_module
from voxflow.runtime.cache.background import (
    PREFETCH_CACHED,
    PREFETCH_RENDERED,
    BackgroundQueueFull,
)
from voxflow.runtime.cache.phrase_cache import CacheSettings, PhraseCache
from voxflow.runtime.jobs import Rendered
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings


def test_a_prefetched_phrase_is_a_hit_on_its_first_request(
    scheduler: Scheduler, engine: PiperEngine
) -> None:
    assert scheduler.prefetch(phrase_request(LONG)).result(60) == PREFETCH_RENDERED
    assert scheduler.prefetch(phrase_request(LONG)).result(60) == PREFETCH_CACHED
    stream = DrainedStream(scheduler, [phrase_request(LONG)])
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


def test_a_stream_that_becomes_due_goes_before_the_rest_of_a_prefetch(
    engine: PiperEngine,
) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=1), cache=PhraseCache(CacheSettings()))
    try:
        prefetch = scheduler.prefetch(phrase_request(LONG * 3))
        stream = DrainedStream(scheduler, [phrase_request("Hello there.", seed=1)])
        # A background task yields between its steps: the stream drained first.
        assert not prefetch.done()
        assert prefetch.result(120) == PREFETCH_RENDERED
        assert stream.done.is_set()
    finally:
        scheduler.shutdown()


def test_a_full_background_queue_refuses_prefetches(
    scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background_module, "MAX_BACKGROUND_TASKS", 0)
    future = scheduler.prefetch(phrase_request(SENTENCE))
    with pytest.raises(BackgroundQueueFull):
        future.result(1)


def test_shutdown_fails_the_prefetches_still_waiting(engine: PiperEngine) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=1), cache=PhraseCache(CacheSettings()))
    futures = [scheduler.prefetch(phrase_request(f"{LONG} {n}")) for n in range(5)]
    scheduler.shutdown()
    for future in futures:
        assert future.done()
    assert any(isinstance(f.exception(), RuntimeError) for f in futures)


def test_a_scheduler_without_a_cache_refuses_prefetches(engine: PiperEngine) -> None:
    scheduler = Scheduler(engine, SchedulerSettings(workers=1))
    try:
        with pytest.raises(RuntimeError, match="no phrase cache"):
            scheduler.prefetch(phrase_request(SENTENCE))
    finally:
        scheduler.shutdown()
