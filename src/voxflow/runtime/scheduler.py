"""Deadline scheduler: many streams' synthesis cut into small jobs, run by a few worker threads.

A stream is a queue of segments to speak in order. Its work is cut into jobs: one *prepare* per
segment (phonemization + text stage) and one *render* per window of latent frames. A stream's
main lane runs one job at a time, so its audio comes out in order; a second lane may prepare a
takeover beside its lead (``voxflow.runtime.stream`` has the rules, the deadlines and the
window sizes; ``voxflow.runtime.handover`` where a takeover switches in).

Workers always take the job with the earliest deadline among those whose release time has come:
a fresh stream's first audio is due ``first_audio_s`` after its text arrived, a playing stream's
next window shortly before its listener would run out. So a new stream's first window jumps
ahead of streams that hold audio in hand, and a stream about to run dry jumps ahead of new
arrivals. A paced stream more than ``max_lead_s`` ahead of its listener waits, which bounds the
audio buffered toward any client; an unpaced stream (``open_stream(paced=False)``, a whole-text
HTTP request) renders as fast as the workers allow, behind every job that is due sooner.

With a phrase cache (``voxflow.runtime.cache``), a segment's text stage first looks the phrase up:
a hit's windows are cut from the cached audio instead of rendered, with the same events and
timing rules. A miss the cache admits is recorded window by window and kept once whole. When
no job is due and a worker is to spare, the workers run the cache's background tasks
(``voxflow.runtime.background``: prefetches, and the head a takeover's recording lacks).

Cancelling drops a stream's queued work at once; a job already running finishes and its result is
discarded. Events go to the stream's sink from worker threads, in order, while the scheduler's lock
is held: sinks must be quick and thread-safe (``loop.call_soon_threadsafe`` is the intended one).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace

from voxflow.engines.base import Engine, FloatArray
from voxflow.runtime.background import BackgroundTask, FillTask, PrefetchTask
from voxflow.runtime.cache import Lookup, PhraseCache
from voxflow.runtime.costs import CostModel, initial_costs
from voxflow.runtime.jobs import (
    Drained,
    Failed,
    Prepared,
    Rendered,
    SchedulerEvent,
    SegmentRequest,
    Sink,
    Takeover,
)
from voxflow.runtime.memory import collect_cycles, free_memory_trimmer
from voxflow.runtime.phrases import CachedPhrase
from voxflow.runtime.priority import lower_thread_priority
from voxflow.runtime.recording import Recording
from voxflow.runtime.stream import Job, Lane, StreamState
from voxflow.runtime.windows import WindowPolicy
from voxflow.runtime.work import Work

__all__ = [
    "BackgroundQueueFull",
    "Drained",
    "Failed",
    "Prepared",
    "Rendered",
    "Scheduler",
    "SchedulerEvent",
    "SchedulerSettings",
    "SchedulerStats",
    "SegmentRequest",
    "Sink",
    "StreamHandle",
    "Takeover",
]

log = logging.getLogger(__name__)

# Background tasks waiting at most (prefetches and fills): past it a prefetch is refused and a
# fill dropped, so that a client flooding prefetches holds a bounded amount of memory.
MAX_BACKGROUND_TASKS = 1024


class BackgroundQueueFull(RuntimeError):
    """A prefetch found ``MAX_BACKGROUND_TASKS`` waiting already."""


# Freed memory is returned to the OS once the workers have been idle this long after a job.
_TRIM_AFTER_S = 0.25


# Cyclic garbage is collected at a trim at most this often (``trim_soon(collect=True)``).
_COLLECT_EVERY_S = 5.0


class _Trim:
    """What ``_take`` returns when it is time to return freed memory."""


_TRIM = _Trim()


@dataclass(frozen=True)
class SchedulerSettings:
    workers: int = 2
    first_window_frames: int = 16
    max_window_frames: int = 256
    max_lead_s: float = 20.0
    # When a fresh stream's first audio is due: the deadline that orders it against streams
    # that are playing (they come first only when they would run dry sooner). Under a burst of
    # new streams this is what their first audio may wait, so that no listener runs dry.
    first_audio_s: float = 0.25
    # How far ahead of playback a lead is rendered while its takeover is not prepared yet.
    lead_hold_s: float = 0.3
    # Threads a job on a fresh stream's way to its first audio may use when nothing else runs
    # (the engine's ``threads``); 1: never more than one.
    wide_threads: int = 2
    # How much lower than the event loop's the workers' CPU priority is (a nice increment,
    # runtime.priority): the loop's refusals, health answers and sends never wait behind them.
    worker_nice: int = 5

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("workers must be >= 1")
        if not 1 <= self.first_window_frames <= self.max_window_frames:
            raise ValueError("need 1 <= first_window_frames <= max_window_frames")
        if self.max_lead_s <= 0:
            raise ValueError("max_lead_s must be > 0")
        if self.first_audio_s < 0 or self.lead_hold_s <= 0:
            raise ValueError("first_audio_s must be >= 0 and lead_hold_s > 0")
        if not 0 <= self.worker_nice <= 19:
            raise ValueError("worker_nice must be within 0..19")

    @property
    def windows(self) -> WindowPolicy:
        later = min(2 * self.first_window_frames, self.max_window_frames)
        return WindowPolicy(self.first_window_frames, self.max_window_frames, later)


class StreamHandle:
    """The caller's side of one stream."""

    def __init__(self, scheduler: Scheduler, stream: StreamState) -> None:
        self._scheduler = scheduler
        self._stream = stream

    @property
    def id(self) -> int:
        return self._stream.id

    def submit(self, request: SegmentRequest) -> None:
        self._scheduler._submit(self._stream, request)

    def close_input(self) -> None:
        """No more segments will come: send ``Drained`` once the queued ones are rendered."""
        self._scheduler._close_input(self._stream)

    def cancel(self) -> None:
        self._scheduler._cancel(self._stream)


@dataclass(frozen=True)
class SchedulerStats:
    ready_streams: int
    active_streams: int
    busy_workers: int
    jobs_run: int
    deadline_misses: int


# A queued lane: (key, order, stream, lane, version); the version invalidates stale entries.
_Entry = tuple[float, int, StreamState, Lane, int]


class Scheduler:
    """Worker threads running prepare/render jobs, earliest deadline first."""

    def __init__(
        self,
        engine: Engine,
        settings: SchedulerSettings,
        clock: Callable[[], float] = time.monotonic,
        cache: PhraseCache | None = None,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._cache = cache
        self._background: deque[BackgroundTask] = deque()
        self._background_busy = False
        self._windows = settings.windows
        self._clock = clock
        # Each engine's own rates (``initial_costs``), created on its first stream.
        self._costs: dict[str, CostModel] = {}
        self._cond = threading.Condition()
        self._ready: list[_Entry] = []  # by deadline
        self._sleeping: list[tuple[float, float, int, StreamState, Lane, int]] = []  # by release
        self._ids = itertools.count(1)
        self._order = itertools.count()
        self._streams: dict[int, StreamState] = {}
        self._busy = 0
        self._jobs_run = 0
        self._misses = 0
        self._stopping = False
        self._trim = free_memory_trimmer()
        self._trim_due: float | None = None
        self._collect_due = False  # the next trim collects cyclic garbage first
        self._collected_at = -_COLLECT_EVERY_S
        self._threads = [
            threading.Thread(target=self._work, name=f"voxflow-worker-{i}", daemon=True)
            for i in range(settings.workers)
        ]
        for thread in self._threads:
            thread.start()

    def _costs_for(self, voice: str | None) -> CostModel:
        """The cost model of the engine that renders ``voice``."""
        name = "piper"
        engine_name = getattr(self._engine, "engine_name", None)
        if voice is not None and engine_name is not None:
            with contextlib.suppress(KeyError):  # an unknown voice fails in its job
                name = engine_name(voice)
        costs = self._costs.get(name)
        if costs is None:
            costs = self._costs.setdefault(name, initial_costs(name))
        return costs

    def trim_soon(self, collect: bool = False) -> None:
        """Return freed memory to the system once the workers are idle: for memory freed outside
        a job (a connection that held much audio ended), which the trim after the last job
        came too early for. ``collect``: run the cyclic garbage collector first
        (``runtime.memory.collect_cycles``: a connection's tasks leave cycles behind)."""
        with self._cond:
            self._collect_due = self._collect_due or collect
            if self._trim_due is None:
                self._trim_due = self._clock() + _TRIM_AFTER_S
                self._cond.notify()

    def open_stream(
        self, sink: Sink, paced: bool = True, burst_s: float = 0.0, voice: str | None = None
    ) -> StreamHandle:
        """A new stream. ``paced``: keep within ``max_lead_s`` of the listener (a live stream);
        ``burst_s``: render this much audio before holding any back (what the client's decoder
        reads before it plays); ``voice``: what it speaks with (its engine's costs plan its
        deadlines; None: the default engine's)."""
        s = self._settings
        costs = self._costs_for(voice)
        with self._cond:
            if self._stopping:
                raise RuntimeError("scheduler is shut down")
            stream = StreamState(
                next(self._ids),
                sink,
                paced,
                self._windows,
                costs,
                s.first_audio_s,
                s.max_lead_s,
                s.lead_hold_s,
                burst_s,
            )
            self._streams[stream.id] = stream
        return StreamHandle(self, stream)

    def prefetch(self, request: SegmentRequest) -> Future[str]:
        """Render ``request`` into the phrase cache when the workers have nothing due (or find
        it there). The future says where it came from (``voxflow.runtime.background``) or why
        it failed."""
        if self._cache is None:
            raise RuntimeError("the scheduler has no phrase cache")
        task = PrefetchTask(request, self._cache)
        self._queue_background(task)
        return task.future

    def _queue_background(self, task: BackgroundTask) -> None:
        with self._cond:
            if self._stopping:
                task.future.set_exception(RuntimeError("scheduler is shut down"))
                return
            if len(self._background) >= MAX_BACKGROUND_TASKS:
                task.future.set_exception(
                    BackgroundQueueFull(f"{MAX_BACKGROUND_TASKS} prefetches are waiting already")
                )
                return
            self._background.append(task)
            self._cond.notify()

    def stats(self) -> SchedulerStats:
        with self._cond:
            ready = {id(e[2]) for e in self._ready if self._valid(e[2], e[3], e[4])}
            return SchedulerStats(
                ready_streams=len(ready),
                active_streams=len(self._streams),
                busy_workers=self._busy,
                jobs_run=self._jobs_run,
                deadline_misses=self._misses,
            )

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the workers after their current job; queued work is dropped."""
        with self._cond:
            self._stopping = True
            for stream in self._streams.values():
                stream.cancel()
            for task in self._background:
                task.future.set_exception(RuntimeError("scheduler is shut down"))
            self._background.clear()
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    # -- stream operations (any thread) ---------------------------------------------------------

    def _submit(self, stream: StreamState, request: SegmentRequest) -> None:
        with self._cond:
            if stream.cancelled:
                return
            if stream.input_closed:
                raise RuntimeError("stream input is closed")
            stream.submit(request, self._clock())
            self._schedule(stream)

    def _close_input(self, stream: StreamState) -> None:
        with self._cond:
            stream.input_closed = True
            self._finish(stream, [])

    def _cancel(self, stream: StreamState) -> None:
        with self._cond:
            stream.cancel()
            self._streams.pop(stream.id, None)
            # Stale heap entries are skipped when popped; the heaps are rebuilt here only when
            # they dominate, to keep cancel O(1) in the common case.
            if len(self._ready) > 64 and len(self._ready) > 4 * len(self._streams):
                self._ready = [e for e in self._ready if not e[2].cancelled]
                heapq.heapify(self._ready)
            if len(self._sleeping) > 64 and len(self._sleeping) > 4 * len(self._streams):
                self._sleeping = [e for e in self._sleeping if not e[3].cancelled]
                heapq.heapify(self._sleeping)

    # -- internals (lock held) -------------------------------------------------------------------

    def _schedule(self, stream: StreamState) -> None:
        """(Re)queue each lane of ``stream`` that has a job to run."""
        self._serve_from_memory(stream)
        now = self._clock()
        for lane in Lane:
            stream.versions[lane] += 1
            work = stream.runnable(lane)
            if work is None:
                continue
            timing = stream.timing(lane, work, now)
            version = stream.versions[lane]
            order = next(self._order)
            if timing.release > now:
                heapq.heappush(
                    self._sleeping, (timing.release, timing.deadline, order, stream, lane, version)
                )
            else:
                heapq.heappush(self._ready, (timing.deadline, order, stream, lane, version))
            self._cond.notify()

    def _serve_from_memory(self, stream: StreamState) -> None:
        """Run a phrase's text stage and first window here, on the calling thread, when memory
        holds it: a hit needs no worker, so its first audio neither waits for one (a busy worker
        renders a window of 20 to 60 ms) nor pays the hand-over to a thread. Its later windows
        go through the workers like any job (cut from the cache there): delivered all at once,
        they would queue ahead of the first window's encoded audio on the event loop. A text
        stage that memory cannot answer, the shared tier and everything rendered go to the
        workers."""
        while self._cache is not None and not stream.cancelled:
            work = stream.runnable(Lane.MAIN)
            if work is None:
                return
            now = self._clock()
            if work.utterance is None:
                phrase = self._memory_hit(work.request)
                if phrase is None:
                    return
                work.phrase = phrase
                job = stream.take(Lane.MAIN, work, now)
                events = stream.prepared(job, phrase.utterance, 0.0)
            else:
                if (
                    work.phrase is None
                    or work.started
                    or stream.timing(Lane.MAIN, work, now).release > now
                ):
                    return
                job = stream.take(Lane.MAIN, work, now)
                assert job.window is not None
                audio = work.phrase.window(*job.window)
                events = stream.rendered(job, audio, 0.0, now)
            stream.versions[Lane.MAIN] += 1  # what was queued for the lane is stale now
            self._deliver_results(stream, events)

    def _memory_hit(self, request: SegmentRequest) -> CachedPhrase | None:
        assert self._cache is not None
        try:
            return self._cache.memory_hit(
                self._engine, request.text, request.voice, request.settings
            )
        except Exception:
            # An unknown voice fails in the text stage, with the engine's error, on a worker.
            log.debug("memory lookup failed; the text stage goes to a worker", exc_info=True)
            return None

    @staticmethod
    def _valid(stream: StreamState, lane: Lane, version: int) -> bool:
        return not stream.cancelled and stream.versions[lane] == version

    def _take(self) -> tuple[StreamState, Job] | BackgroundTask | _Trim | None:
        """The job with the earliest deadline among released ones; waits for one. Returns
        ``_TRIM`` once the workers have been idle for ``_TRIM_AFTER_S`` since the last job (the
        memory it used is free by then: its results went out and were dropped)."""
        while True:
            if self._stopping:
                return None
            now = self._clock()
            while self._sleeping and self._sleeping[0][0] <= now:
                _, deadline, order, stream, lane, version = heapq.heappop(self._sleeping)
                heapq.heappush(self._ready, (deadline, order, stream, lane, version))
            while self._ready:
                _, _, stream, lane, version = heapq.heappop(self._ready)
                if not self._valid(stream, lane, version):
                    continue
                work = stream.runnable(lane)
                if work is None:
                    continue
                stream.versions[lane] += 1
                job = stream.take(lane, work, now)
                if (job.playback_end is None or stream.costs.wide_windows) and self._alone():
                    job = replace(job, threads=self._settings.wide_threads)
                if log.isEnabledFor(logging.DEBUG):
                    log.debug(
                        "stream %d %s %s tag %d window %s playback_end %s at %.3f",
                        stream.id,
                        lane.value,
                        "prepare" if job.window is None else "render",
                        work.request.tag,
                        job.window,
                        None if job.playback_end is None else f"{job.playback_end:.3f}",
                        now,
                    )
                return stream, job
            if self._background and self._background_spare():
                self._background_busy = True
                return self._background.popleft()
            wait = self._sleeping[0][0] - now if self._sleeping else None
            if self._trim_due is not None and not self._busy:
                if now >= self._trim_due:
                    self._trim_due = None
                    return _TRIM
                wait = self._trim_due - now if wait is None else min(wait, self._trim_due - now)
            self._cond.wait(wait)

    def _collect_now(self) -> bool:
        """Whether this trim collects cyclic garbage first: when asked to, at most once every
        ``_COLLECT_EVERY_S`` (a burst of connections ending holds the event loop's GIL for one
        collection, not one each); one asked for too soon is put off to then."""
        if not self._collect_due:
            return False
        wait = self._collected_at + _COLLECT_EVERY_S - self._clock()
        if wait > 0:
            self._trim_due = self._clock() + wait
            return False
        self._collect_due = False
        return True

    def _background_spare(self) -> bool:
        """Whether a background task may run now: one at a time, and only while a worker stays
        free for a stream that becomes due (with one worker: while it has nothing else)."""
        return not self._background_busy and self._busy < max(1, self._settings.workers - 1)

    def _alone(self) -> bool:
        """Whether no job runs and none waits: a job may use every core."""
        if self._busy or self._settings.wide_threads <= 1:
            return False
        return not any(
            self._valid(e[2], e[3], e[4]) and e[2].runnable(e[3]) is not None for e in self._ready
        )

    def _finish(self, stream: StreamState, events: list[SchedulerEvent]) -> None:
        """Deliver ``events`` (and ``Drained`` when due) and requeue the stream."""
        self._deliver_results(stream, events)
        if not stream.cancelled:
            self._schedule(stream)

    def _deliver_results(self, stream: StreamState, events: list[SchedulerEvent]) -> None:
        """Count the late windows among a job's ``events``, add ``Drained`` when due (the stream
        is then forgotten) and deliver them."""
        self._misses += sum(1 for e in events if isinstance(e, Rendered) and e.late_s > 0)
        events = events + stream.drained()
        if events and isinstance(events[-1], Drained):
            self._streams.pop(stream.id, None)
        self._deliver(stream, events)

    def _deliver(self, stream: StreamState, events: list[SchedulerEvent]) -> None:
        """Hand ``events`` to the stream's sink; a sink that fails ends its stream, not the
        worker."""
        for event in events:
            if stream.cancelled:
                return
            try:
                stream.sink(event)
            except Exception:
                log.exception("sink of stream %d failed; cancelling the stream", stream.id)
                stream.cancel()
                self._streams.pop(stream.id, None)

    # -- worker ----------------------------------------------------------------------------------

    def _work(self) -> None:
        lower_thread_priority(self._settings.worker_nice)
        while True:
            with self._cond:
                picked = self._take()
                if picked is None:
                    return
                if isinstance(picked, _Trim):
                    if not self._collect_now():
                        self._trim()  # lock held: it takes well under a millisecond
                        continue
                else:
                    self._busy += 1
            if isinstance(picked, _Trim):
                collect_cycles()  # not under the lock: it takes 10 to 20 ms
                with self._cond:
                    self._collected_at = self._clock()
                    self._trim()
                continue
            if not isinstance(picked, tuple):
                self._run_background(picked)
                continue
            stream, job = picked
            self._run_job(stream, job)

    def _run_job(self, stream: StreamState, job: Job) -> None:
        work = job.work
        request = work.request
        started = time.perf_counter()
        error: Exception | None = None
        found: Lookup | None = None
        try:
            if job.window is None:
                found = self._lookup(request)
                if found is not None and found.phrase is not None:
                    result = found.phrase.utterance
                else:
                    result = self._engine.prepare(
                        request.text, request.voice, request.settings, job.threads
                    )
            elif work.phrase is not None:
                audio = work.phrase.window(*job.window)
            else:
                utterance = work.utterance
                assert utterance is not None
                audio = self._engine.render(utterance, *job.window, job.threads)
        except Exception as failure:  # delivered to the stream's owner, never swallowed
            log.exception("synthesis job failed for stream %d", stream.id)
            error = failure
        elapsed = time.perf_counter() - started
        with self._cond:
            self._busy -= 1
            self._jobs_run += 1
            events: list[SchedulerEvent]
            if error is not None:
                events = stream.failed(job, error)
            elif job.window is None:
                if found is not None:
                    work.phrase = found.phrase
                    work.cache_key = found.key if found.admit else None
                else:
                    self._costs_for(request.voice).observe_prepare(len(request.text), elapsed)
                events = stream.prepared(job, result, elapsed)
            else:
                if work.phrase is None:
                    self._costs_for(request.voice).observe_render(
                        job.window[1] - job.window[0], elapsed
                    )
                    self._record(work, job.window, audio)
                events = stream.rendered(job, audio, elapsed, self._clock())
            self._finish(stream, events)
            self._trim_due = self._clock() + _TRIM_AFTER_S

    def _lookup(self, request: SegmentRequest) -> Lookup | None:
        """The cache's answer for ``request`` (None without a cache, or when the lookup failed:
        logged, and the request is rendered as if there were no cache)."""
        if self._cache is None:
            return None
        try:
            key = self._cache.key(self._engine, request.text, request.voice, request.settings)
            return self._cache.lookup(key)
        except Exception:
            # An unknown voice fails in the text stage, with the engine's own error; anything
            # else is a cache bug, which must not cost the listener the segment.
            log.exception("phrase cache lookup failed; rendering without the cache")
            return None

    def _record(self, work: Work, window: tuple[int, int], audio: FloatArray) -> None:
        """Add a rendered window to an admitted miss's recording; once the work's last window
        is in, keep the phrase (lock held: ``store`` is quick), or queue the frames it lacks (a
        takeover's head, a lead's tail) as a background fill."""
        if work.cache_key is None or work.utterance is None:
            return
        recording = work.recording
        if recording is None:
            recording = work.recording = Recording(work.cache_key, work.utterance, window[0])
        recording.add(window[0], window[1], audio)
        if recording.broken:
            work.cache_key = work.recording = None
            return
        if window[1] < work.end:
            return
        work.cache_key = work.recording = None
        assert self._cache is not None
        if recording.missing() == (None, None):
            self._cache.store(recording.key, recording.complete())
        else:
            self._queue_background(FillTask(recording, self._cache))

    def _run_background(self, task: BackgroundTask) -> None:
        finished = True
        try:
            finished = task.step(self._engine)
        except Exception as failure:  # the task's owner gets it through the future
            log.exception("phrase cache background task failed")
            task.future.set_exception(failure)
        with self._cond:
            self._busy -= 1
            self._background_busy = False
            if not finished:
                if self._stopping:
                    task.future.set_exception(RuntimeError("scheduler is shut down"))
                else:
                    self._background.appendleft(task)
            self._trim_due = self._clock() + _TRIM_AFTER_S
            self._cond.notify_all()
