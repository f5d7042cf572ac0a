"""The phrase cache's part in a stream's jobs, for the scheduler: the lookup before a text stage,
the memory hit that needs no worker, and the recording of each window a miss renders.

A failure here never costs the listener the segment: a lookup that fails renders it as if there
were no cache. An unknown voice fails in the text stage, with the engine's own error.
"""

from __future__ import annotations

import logging

from voxflow.engines.base import Engine, FloatArray
from voxflow.runtime.background import FillTask
from voxflow.runtime.cache.phrase_cache import Lookup, PhraseCache
from voxflow.runtime.cache.phrases import CachedPhrase
from voxflow.runtime.cache.recording import Recording
from voxflow.runtime.jobs import SegmentRequest
from voxflow.runtime.work import Work

__all__ = ["lookup", "memory_hit", "record_window"]

log = logging.getLogger(__name__)


def memory_hit(cache: PhraseCache, engine: Engine, request: SegmentRequest) -> CachedPhrase | None:
    """The phrase memory holds for ``request`` (None: not there, or its key failed)."""
    try:
        return cache.memory_hit(engine, request.text, request.voice, request.settings)
    except Exception:
        # An unknown voice fails in the text stage, with the engine's error, on a worker.
        log.debug("memory lookup failed; the text stage goes to a worker", exc_info=True)
        return None


def lookup(cache: PhraseCache, engine: Engine, request: SegmentRequest) -> Lookup | None:
    """The cache's answer for ``request`` (None when the lookup failed: logged)."""
    try:
        return cache.lookup(cache.key(engine, request.text, request.voice, request.settings))
    except Exception:
        # Anything but an unknown voice (which fails in the text stage, with the engine's own
        # error) is a cache bug, which must not cost the listener the segment.
        log.exception("phrase cache lookup failed; rendering without the cache")
        return None


def record_window(
    cache: PhraseCache, work: Work, window: tuple[int, int], audio: FloatArray
) -> FillTask | None:
    """Add a rendered window to an admitted miss's recording. Once the work's last window is
    in, the phrase is kept (``store`` is quick), or a fill is returned for the frames it lacks
    (a takeover's head, a lead's tail), to be queued as a background task."""
    if work.cache_key is None or work.utterance is None:
        return None
    recording = work.recording
    if recording is None:
        recording = work.recording = Recording(work.cache_key, work.utterance, window[0])
    recording.add(window[0], window[1], audio)
    if recording.broken:
        work.cache_key = work.recording = None
        return None
    if window[1] < work.end:
        return None
    work.cache_key = work.recording = None
    if recording.missing() == (None, None):
        cache.store(recording.key, recording.complete())
        return None
    return FillTask(recording, cache)
