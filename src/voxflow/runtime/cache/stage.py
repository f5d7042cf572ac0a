"""The phrase cache as one stage of the scheduler's jobs.

Before a segment's text stage the stage looks its phrase up. A hit's windows are then cut from
the cached audio instead of rendered; a miss the cache admits is recorded window by window and
kept once whole (or, when the stream spoke only part of it, once a background fill has rendered
the rest: ``voxflow.runtime.cache.background``).

What the stage keeps for a work (the phrase it is cut from, or the recording of its rendering)
lives here, not on the work: it is added when the work's lookup answers and released when the
work leaves its stream's queue (``release``: rendered to its end, failed or cancelled), so a
stream that ends or is cancelled leaves nothing behind.

A failure here never costs the listener the segment: a lookup that fails renders it as if there
were no cache. An unknown voice fails in the text stage, with the engine's own error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from voxflow.engines.base import Engine, FloatArray, Utterance
from voxflow.runtime.cache.background import FillTask
from voxflow.runtime.cache.phrase_cache import Lookup, PhraseCache
from voxflow.runtime.cache.phrases import CachedPhrase
from voxflow.runtime.cache.recording import Recording
from voxflow.runtime.jobs import SegmentRequest
from voxflow.runtime.work import Work

__all__ = ["CacheStage"]

log = logging.getLogger(__name__)


@dataclass
class _Miss:
    """An admitted miss: its key, and its windows so far (from its first one on)."""

    key: str
    recording: Recording | None = None


class CacheStage:
    """See the module docstring. ``lookup`` may be called from any thread; every other call
    reads or changes the per-work state and is made with the scheduler's lock held."""

    def __init__(self, cache: PhraseCache, engine: Engine) -> None:
        self._cache = cache
        self._engine = engine
        self._hits: dict[Work, CachedPhrase] = {}
        self._misses: dict[Work, _Miss] = {}

    @property
    def cache(self) -> PhraseCache:
        return self._cache

    @property
    def works_held(self) -> int:
        """How many works the stage keeps state for."""
        return len(self._hits) + len(self._misses)

    def memory_hit(self, work: Work) -> Utterance | None:
        """When memory holds ``work``'s phrase: its utterance, and its windows are cut from the
        phrase from now on. None when memory does not hold it (or its key failed: the text
        stage on a worker then fails with the engine's error). Quick: it reads no file and
        never asks the shared tier, so the thread that submitted may run it."""
        request = work.request
        try:
            phrase = self._cache.memory_hit(
                self._engine, request.text, request.voice, request.settings, request.lookahead
            )
        except Exception:
            log.debug("memory lookup failed; the text stage goes to a worker", exc_info=True)
            return None
        if phrase is None:
            return None
        self._hits[work] = phrase
        return phrase.utterance

    def lookup(self, request: SegmentRequest) -> Lookup | None:
        """The cache's answer for ``request``, on a worker before its text stage (None when the
        lookup failed: logged). Keeps nothing: ``looked_up`` does, under the lock."""
        try:
            key = self._cache.key(
                self._engine, request.text, request.voice, request.settings, request.lookahead
            )
            return self._cache.lookup(key)
        except Exception:
            # Anything but an unknown voice (which fails in the text stage, with the engine's
            # own error) is a cache bug, which must not cost the listener the segment.
            log.exception("phrase cache lookup failed; rendering without the cache")
            return None

    def looked_up(self, work: Work, found: Lookup) -> None:
        """Keep what ``found`` means for ``work``, which is still queued: the phrase its
        windows are cut from, or the key under which its rendering is to be kept."""
        if found.phrase is not None:
            self._hits[work] = found.phrase
        elif found.admit:
            self._misses[work] = _Miss(found.key)

    def phrase(self, work: Work) -> CachedPhrase | None:
        """The phrase ``work``'s windows are cut from (``CachedPhrase.window``); None: they are
        rendered."""
        return self._hits.get(work)

    def record(self, work: Work, window: tuple[int, int], audio: FloatArray) -> FillTask | None:
        """Add a window rendered for ``work`` to its recording, if its rendering is to be kept.
        Once its last window is in, the phrase is kept (``store`` is quick), or a fill is
        returned for the frames it lacks (a takeover's head, a lead's tail), to be queued as a
        background task."""
        miss = self._misses.get(work)
        if miss is None or work.utterance is None:
            return None
        recording = miss.recording
        if recording is None:
            recording = miss.recording = Recording(miss.key, work.utterance, window[0])
        recording.add(window[0], window[1], audio)
        if recording.broken:
            del self._misses[work]
            return None
        if window[1] < work.end:
            return None
        del self._misses[work]
        if recording.missing() == (None, None):
            self._cache.store(recording.key, recording.complete())
            return None
        return FillTask(recording, self._cache)

    def release(self, work: Work) -> None:
        """``work`` left its stream's queue: forget what the stage kept for it."""
        self._hits.pop(work, None)
        self._misses.pop(work, None)
