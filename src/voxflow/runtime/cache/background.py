"""Work the scheduler does for the phrase cache when nothing is due: prefetches and fills.

A *prefetch* renders a request that no listener waits for yet (``--warm`` at start-up, a client's
prefetch call): it looks the phrase up first (a shared-tier hit is kept in memory and is all it
takes), else prepares it and renders it window by window, then stores it. A *fill* renders the
frames a recording lacks (a takeover's head, which its lead spoke; a lead's tail, which its
takeover spoke) so that the whole phrase can be kept.

Each task runs in steps of bounded cost (one text stage, or one window of ``WINDOW_FRAMES``), one
step per pick, so that a background task holds a worker no longer than a foreground job would
and a stream that becomes due waits for at most one step. A task's result is its future:
where the phrase came from (``PREFETCH_*``), or the exception that stopped it.

The tasks wait in a ``BackgroundQueue`` until a worker is to spare: one task runs at a time, and
only while a worker stays free for a stream that becomes due.
"""

from __future__ import annotations

import logging
from collections import deque
from concurrent.futures import Future
from typing import Protocol

from voxflow.engines.base import Engine, Utterance
from voxflow.engines.lookahead import prepare_reading_on
from voxflow.runtime.cache.phrase_cache import PhraseCache
from voxflow.runtime.cache.recording import Recording
from voxflow.runtime.handover import lead_in
from voxflow.runtime.jobs import SegmentRequest

__all__ = [
    "MAX_BACKGROUND_TASKS",
    "PREFETCH_CACHED",
    "PREFETCH_RENDERED",
    "BackgroundQueue",
    "BackgroundQueueFull",
    "BackgroundTask",
    "FillTask",
    "PrefetchTask",
]

log = logging.getLogger(__name__)

WINDOW_FRAMES = 64  # about 0.75 s of audio on the bundled voice, 30-50 ms of one core
PREFETCH_CACHED = "cached"  # already in memory, or found in the shared tier
PREFETCH_RENDERED = "rendered"

# Background tasks waiting at most (prefetches and fills): past it a prefetch is refused and a
# fill dropped, so that a client flooding prefetches holds a bounded amount of memory.
MAX_BACKGROUND_TASKS = 1024


class BackgroundQueueFull(RuntimeError):
    """A prefetch found ``MAX_BACKGROUND_TASKS`` waiting already."""


class BackgroundTask(Protocol):
    future: Future[str]

    def step(self, engine: Engine) -> bool:
        """Run one bounded step on the calling worker; True once the task is finished (its
        future then has its result). May raise: the scheduler sets the future's exception."""
        ...


class FillTask:
    """Render what a recording lacks (``Recording.missing``), then keep the whole phrase."""

    def __init__(self, recording: Recording, cache: PhraseCache) -> None:
        self.future: Future[str] = Future()
        self._recording = recording
        self._cache = cache

    def step(self, engine: Engine) -> bool:
        recording = self._recording
        head, tail = recording.missing()
        utterance = recording.utterance
        head_audio = None if head is None else engine.render(utterance, *head, threads=1)
        tail_audio = None if tail is None else engine.render(utterance, *tail, threads=1)
        self._cache.store(recording.key, recording.complete(head_audio, tail_audio))
        self.future.set_result(PREFETCH_RENDERED)
        return True


class PrefetchTask:
    """Look ``request`` up in the cache, else render it whole and keep it."""

    def __init__(self, request: SegmentRequest, cache: PhraseCache) -> None:
        self.future: Future[str] = Future()
        self._request = request
        self._cache = cache
        self._recording: Recording | None = None

    def step(self, engine: Engine) -> bool:
        if self._recording is None:
            request = self._request
            # The key on the worker: the first one of a voice hashes its model file.
            key = self._cache.key(
                engine, request.text, request.voice, request.settings, request.lookahead
            )
            found = self._cache.lookup(key, force=True)
            if found.phrase is not None:
                self.future.set_result(PREFETCH_CACHED)
                return True
            utterance = prepare_reading_on(
                engine, request.text, request.lookahead, request.voice, request.settings, 1
            )
            self._recording = Recording(key, utterance, lead_in(utterance))
            return self._finish_if_whole(utterance)
        recording = self._recording
        start = recording.end_frame
        end = min(recording.utterance.num_frames, start + WINDOW_FRAMES)
        recording.add(start, end, engine.render(recording.utterance, start, end, threads=1))
        return self._finish_if_whole(recording.utterance)

    def _finish_if_whole(self, utterance: Utterance) -> bool:
        recording = self._recording
        assert recording is not None
        if not recording.reached_end:
            return False
        self._cache.store(recording.key, recording.complete())
        self.future.set_result(PREFETCH_RENDERED)
        return True


class BackgroundQueue:
    """The tasks waiting for a worker to spare, at most ``MAX_BACKGROUND_TASKS``. Not
    thread-safe: the scheduler calls it with its lock held."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._tasks: deque[BackgroundTask] = deque()
        self._running = False
        self._closed = False

    def put(self, task: BackgroundTask) -> bool:
        """Queue ``task``; True if it was (a worker may take it now). A full or closed queue
        fails the task's future instead."""
        if self._closed:
            task.future.set_exception(RuntimeError("scheduler is shut down"))
            return False
        if len(self._tasks) >= MAX_BACKGROUND_TASKS:
            task.future.set_exception(
                BackgroundQueueFull(f"{MAX_BACKGROUND_TASKS} prefetches are waiting already")
            )
            return False
        self._tasks.append(task)
        return True

    def take(self, busy: int) -> BackgroundTask | None:
        """The next task, if one may run now that ``busy`` workers run jobs: one at a time, and
        only while a worker stays free for a stream that becomes due (with one worker: while it
        has nothing else)."""
        if not self._tasks or self._running or busy >= max(1, self._workers - 1):
            return None
        self._running = True
        return self._tasks.popleft()

    def step_done(self, task: BackgroundTask, finished: bool) -> None:
        """A step of ``task`` (from ``take``) ran; one that is not ``finished`` goes on first
        next time, unless the queue was closed meanwhile."""
        self._running = False
        if finished:
            return
        if self._closed:
            task.future.set_exception(RuntimeError("scheduler is shut down"))
        else:
            self._tasks.appendleft(task)

    def close(self) -> None:
        """Fail every waiting task and refuse later ones (the scheduler is shutting down)."""
        self._closed = True
        for task in self._tasks:
            task.future.set_exception(RuntimeError("scheduler is shut down"))
        self._tasks.clear()
