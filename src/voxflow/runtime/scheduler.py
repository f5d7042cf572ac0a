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

With a phrase cache, its stage (``voxflow.runtime.cache.stage``) looks a segment's phrase up
before its text stage: a hit's windows are cut from the cached audio instead of rendered, with
the same events and timing rules. A miss the cache admits is recorded window by window and kept
once whole. When no job is due and a worker is to spare, the workers run the cache's background
tasks (``voxflow.runtime.cache.background``: prefetches, and the head a takeover's recording
lacks).

Cancelling drops a stream's queued work at once; a job already running finishes and its result is
discarded. Events go to the stream's sink from worker threads, in order, while the scheduler's lock
is held: sinks must be quick and thread-safe (``loop.call_soon_threadsafe`` is the intended one).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from voxflow.engines.base import Engine
from voxflow.engines.lookahead import prepare_reading_on
from voxflow.runtime.cache.background import BackgroundQueue, BackgroundTask, PrefetchTask
from voxflow.runtime.cache.phrase_cache import Lookup, PhraseCache
from voxflow.runtime.cache.phrases import CachedPhrase
from voxflow.runtime.cache.stage import CacheStage
from voxflow.runtime.costs import CostModel, ProcessOverhead, initial_costs
from voxflow.runtime.jobs import (
    SchedulerEvent,
    SegmentRequest,
    Sink,
)
from voxflow.runtime.ledger import WorkLedger
from voxflow.runtime.memory import MemoryUpkeep, collect_cycles, free_memory_trimmer
from voxflow.runtime.policy import SchedulingPolicy
from voxflow.runtime.priority import lower_thread_priority
from voxflow.runtime.scheduler_settings import SchedulerSettings, SchedulerStats
from voxflow.runtime.slack import SlackStats
from voxflow.runtime.stream import StreamState
from voxflow.runtime.work import Job, Lane

__all__ = ["Scheduler", "StreamHandle"]

log = logging.getLogger(__name__)


class _Trim:
    """What ``_take`` returns when it is time to return freed memory."""


_TRIM = _Trim()


@dataclass(frozen=True)
class _Pick:
    """A job a worker takes, and the phrase its window is cut from (None: rendered), read
    under the lock when it is taken: a cancel may release the cache stage's state before the
    job runs."""

    stream: StreamState
    job: Job
    phrase: CachedPhrase | None


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

    def hold(self, held: bool) -> None:
        """Render nothing more for now (True), or go on (False): its owner's buffers are full."""
        self._scheduler._hold(self._stream, held)


class Scheduler:
    """Worker threads running prepare/render jobs, earliest deadline first."""

    def __init__(
        self,
        engine: Engine,
        settings: SchedulerSettings,
        clock: Callable[[], float] = time.monotonic,
        cache: PhraseCache | None = None,
        upkeep: MemoryUpkeep | None = None,
    ) -> None:
        """``upkeep``: when idle workers return freed memory (default: ``malloc_trim`` after
        ``runtime.memory``'s delays)."""
        self._engine = engine
        self._settings = settings
        self._stage = None if cache is None else CacheStage(cache, engine)
        self._background = BackgroundQueue(settings.workers)
        self._clock = clock
        # Each engine's own rates (``initial_costs``), created on its first stream.
        self._costs: dict[str, CostModel] = {}
        self._overhead = ProcessOverhead()
        self._cond = threading.Condition()
        # Guarded by the lock, as all below (and the stage's state).
        self._policy = SchedulingPolicy(
            settings, None if self._stage is None else self._stage.release
        )
        self._busy = 0
        self._jobs_run = 0
        self._stopping = False
        self._upkeep = upkeep or MemoryUpkeep(free_memory_trimmer())
        self._threads = [
            threading.Thread(target=self._work, name=f"voxflow-worker-{i}", daemon=True)
            for i in range(settings.workers)
        ] + [
            threading.Thread(
                target=self._work_first_audio, name=f"voxflow-first-audio-{i}", daemon=True
            )
            for i in range(settings.first_audio_workers)
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
        return self._engine_costs(name)

    def _engine_costs(self, engine: str) -> CostModel:
        costs = self._costs.get(engine)
        if costs is None:
            costs = self._costs.setdefault(engine, initial_costs(engine))
        return costs

    def audio_cost(self, engine: str) -> float:
        """CPU seconds of the whole process a second of ``engine``'s audio takes: its jobs'
        (``CostModel.audio_cost_s``, as learnt so far) and what the process spends around them
        (``ProcessOverhead``): what admission counts one of its speaking streams at. Any
        thread."""
        with self._cond:
            jobs_cpu_s = sum(costs.observed_cpu_s for costs in self._costs.values())
            self._overhead.observe(jobs_cpu_s, time.process_time(), self._clock())
            return self._engine_costs(engine).audio_cost_s * self._overhead.ratio

    def start_cost(self, engine: str) -> float:
        """CPU seconds of the whole process the first second of an ``engine`` stream's audio
        takes (``CostModel.start_cost_s``, with the process's overhead as ``audio_cost``):
        what admission counts a stream at while it starts. Any thread."""
        with self._cond:
            start = self._engine_costs(engine).start_cost_s
            return (start or 0.0) * self._overhead.ratio

    def slack(self) -> SlackStats:
        """The workers' slack against the listeners so far (``voxflow.runtime.slack``): what
        admission learns its limit from. Any thread."""
        with self._cond:
            return self._policy.slack_stats(self._clock())

    def trim_soon(self, collect: bool = False) -> None:
        """Return freed memory to the system once the workers are idle: for memory freed outside
        a job (a connection that held much audio ended), which the trim after the last job
        came too early for. ``collect``: run the cyclic garbage collector first
        (``runtime.memory.collect_cycles``: a connection's tasks leave cycles behind)."""
        with self._cond:
            if self._upkeep.ask(self._clock(), collect):
                self._cond.notify_all()

    def open_stream(
        self, sink: Sink, paced: bool = True, burst_s: float = 0.0, voice: str | None = None
    ) -> StreamHandle:
        """A new stream. ``paced``: keep within ``max_lead_s`` of the listener (a live stream);
        ``burst_s``: render this much audio before holding any back (what the client's decoder
        reads before it plays); ``voice``: what it speaks with (its engine's costs plan its
        deadlines; None: the default engine's)."""
        costs = self._costs_for(voice)
        with self._cond:
            if self._stopping:
                raise RuntimeError("scheduler is shut down")
            stream = self._policy.open_stream(sink, costs, paced, burst_s)
        return StreamHandle(self, stream)

    def prefetch(self, request: SegmentRequest) -> Future[str]:
        """Render ``request`` into the phrase cache when the workers have nothing due (or find
        it there). The future says where it came from (``voxflow.runtime.cache.background``)
        or why it failed."""
        if self._stage is None:
            raise RuntimeError("the scheduler has no phrase cache")
        task = PrefetchTask(request, self._stage.cache)
        with self._cond:
            if self._background.put(task):
                self._cond.notify_all()
        return task.future

    def stats(self) -> SchedulerStats:
        with self._cond:
            return SchedulerStats(
                ready_streams=self._policy.ready_streams(),
                active_streams=len(self._policy.streams),
                workers=self._settings.workers,
                busy_workers=self._busy,
                jobs_run=self._jobs_run,
                deadline_misses=self._policy.misses,
            )

    def work_ledger(self) -> WorkLedger:
        """The jobs' CPU time so far, by what they were for (a copy)."""
        with self._cond:
            return self._policy.ledger.snapshot()

    def thread_ids(self) -> tuple[int, ...]:
        """The workers' native thread ids (every job's own thread), for per-thread CPU."""
        return tuple(t.native_id for t in self._threads if t.native_id is not None)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the workers after their current job; queued work is dropped."""
        with self._cond:
            self._stopping = True
            self._policy.cancel_all()
            self._background.close()
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    # -- stream operations (any thread) ---------------------------------------------------------

    def _submit(self, stream: StreamState, request: SegmentRequest) -> None:
        with self._cond:
            if stream.cancelled:
                return
            self._deliver(stream, self._policy.submit(stream, request, self._clock()))
            self._served(stream)

    def _close_input(self, stream: StreamState) -> None:
        with self._cond:
            self._deliver(stream, self._policy.close_input(stream, self._clock()))
            self._served(stream)

    def _cancel(self, stream: StreamState) -> None:
        with self._cond:
            self._policy.cancel(stream)

    def _hold(self, stream: StreamState, held: bool) -> None:
        with self._cond:
            self._policy.hold(stream, held, self._clock())
            if not held:
                self._served(stream)

    # -- internals (lock held) -------------------------------------------------------------------

    def _served(self, stream: StreamState) -> None:
        """After the policy queued ``stream``'s lanes: serve what memory holds of it at once
        (then queue it again), and wake a worker."""
        if not stream.cancelled and self._serve_from_memory(stream):
            self._policy.requeue(stream, self._clock())
        self._cond.notify_all()  # first-audio workers take only some jobs: wake every one

    def _serve_from_memory(self, stream: StreamState) -> bool:
        """Run a phrase's text stage and first window here, on the calling thread, when memory
        holds it: a hit needs no worker, so its first audio neither waits for one (a busy worker
        renders a window of 20 to 60 ms) nor pays the hand-over to a thread. Its later windows
        go through the workers like any job (cut from the cache there): delivered all at once,
        they would queue ahead of the first window's encoded audio on the event loop. A text
        stage that memory cannot answer, the shared tier and everything rendered go to the
        workers. True when it served something (the stream's queued lanes are stale then)."""
        stage = self._stage
        served = False
        while stage is not None and not stream.cancelled:
            work = stream.runnable(Lane.MAIN)
            if work is None:
                break
            now = self._clock()
            if work.utterance is None:
                utterance = stage.memory_hit(work)
                if utterance is None:
                    break
                job = stream.take(Lane.MAIN, work, now)
                events = stream.prepared(job, utterance, 0.0, now, cached=True)
            else:
                phrase = stage.phrase(work)
                if (
                    phrase is None
                    or work.started
                    or stream.timing(Lane.MAIN, work, now).release > now
                ):
                    break
                job = stream.take(Lane.MAIN, work, now)
                assert job.window is not None
                audio = phrase.window(*job.window)
                events = stream.rendered(job, audio, 0.0, now)
            stream.versions[Lane.MAIN] += 1  # what was queued for the lane is stale now
            served = True
            self._deliver(stream, self._policy.finish(stream, events, now))
        return served

    def _take(self) -> _Pick | BackgroundTask | _Trim | None:
        """The job with the earliest deadline among released ones; waits for one. Returns
        ``_TRIM`` when no job runs and the upkeep's trim is due."""
        while True:
            if self._stopping:
                return None
            now = self._clock()
            picked = self._next_job(now)
            if picked is not None:
                return picked
            task = self._background.take(self._busy)
            if task is not None:
                return task
            wait = self._policy.next_release_s(now)
            if not self._busy:
                if self._upkeep.take(now):
                    return _TRIM
                trim_in = self._upkeep.wait_s(now)
                if trim_in is not None:
                    wait = trim_in if wait is None else min(wait, trim_in)
            self._cond.wait(wait)

    def _next_job(self, now: float, first_audio: bool = False) -> _Pick | None:
        picked = self._policy.next_job(now, self._busy, first_audio)
        if picked is None:
            return None
        stream, job = picked
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "stream %d %s %s tag %d window %s playback_end %s at %.3f",
                stream.id,
                job.lane.value,
                "prepare" if job.window is None else "render",
                job.work.request.tag,
                job.window,
                None if job.playback_end is None else f"{job.playback_end:.3f}",
                now,
            )
        phrase = None
        if self._stage is not None and job.window is not None:
            phrase = self._stage.phrase(job.work)
        return _Pick(stream, job, phrase)

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
                self._policy.cancel(stream)

    # -- worker ----------------------------------------------------------------------------------

    def _work(self) -> None:
        lower_thread_priority(self._settings.worker_nice)
        while True:
            with self._cond:
                picked = self._take()
                if picked is None:
                    return
                if isinstance(picked, _Trim):
                    if not self._upkeep.collect_first(self._clock()):
                        self._upkeep.trim()  # lock held: it takes well under a millisecond
                        continue
                else:
                    self._busy += 1
            if isinstance(picked, _Trim):
                collect_cycles()  # not under the lock: it takes 10 to 20 ms
                with self._cond:
                    self._upkeep.collected(self._clock())
                    self._upkeep.trim()
                continue
            if isinstance(picked, _Pick):
                self._run_job(picked)
            else:
                self._run_background(picked)

    def _work_first_audio(self) -> None:
        """A worker that runs only first-audio jobs (``SchedulingPolicy.next_job``), beside the
        others and at a higher priority than theirs: on a busy machine a new stream's first
        audio then shares a core at once instead of waiting for a window to end."""
        lower_thread_priority(self._settings.first_audio_nice)
        while True:
            with self._cond:
                picked = None
                while picked is None and not self._stopping:
                    now = self._clock()
                    picked = self._next_job(now, first_audio=True)
                    if picked is None:
                        self._cond.wait(self._policy.next_release_s(now, first_audio=True))
                if picked is None:
                    return
                self._busy += 1
            self._run_job(picked)

    def _run_job(self, pick: _Pick) -> None:
        stream, job, phrase = pick.stream, pick.job, pick.phrase
        work = job.work
        request = work.request
        started = time.perf_counter()
        cpu_started = time.thread_time()  # ONNX Runtime runs one-thread jobs on this thread
        error: Exception | None = None
        found: Lookup | None = None
        try:
            if job.window is None:
                found = None if self._stage is None else self._stage.lookup(request)
                if found is not None and found.phrase is not None:
                    result = found.phrase.utterance
                else:
                    result = prepare_reading_on(
                        self._engine,
                        request.text,
                        request.lookahead,
                        request.voice,
                        request.settings,
                        job.threads,
                    )
            elif phrase is not None:
                audio = phrase.window(*job.window)
            else:
                utterance = work.utterance
                assert utterance is not None
                audio = self._engine.render(utterance, *job.window, job.threads)
        except Exception as failure:  # delivered to the stream's owner, never swallowed
            log.exception("synthesis job failed for stream %d", stream.id)
            error = failure
        elapsed = time.perf_counter() - started
        cpu = time.thread_time() - cpu_started
        with self._cond:
            self._busy -= 1
            self._jobs_run += 1
            now = self._clock()
            events: list[SchedulerEvent]
            if error is not None:
                events = self._policy.failed(stream, job, error, now)
            elif job.window is None:
                # Only for a work still queued: one that left meanwhile was released already.
                if found is not None and self._stage is not None and stream.queued(work):
                    self._stage.looked_up(work, found)
                cached = found is not None and found.phrase is not None
                events = self._policy.prepared(
                    stream, job, result, elapsed, now, learn=found is None, cpu_s=cpu, cached=cached
                )
            else:
                rendered = phrase is None
                if rendered and self._stage is not None:
                    fill = self._stage.record(work, job.window, audio)
                    if fill is not None:
                        self._background.put(fill)  # the worker woken below may take it
                events = self._policy.rendered(
                    stream, job, audio, elapsed, now, learn=rendered, cpu_s=cpu
                )
            self._deliver(stream, events)
            self._served(stream)
            self._upkeep.job_done(self._clock())

    def _run_background(self, task: BackgroundTask) -> None:
        finished = True
        try:
            finished = task.step(self._engine)
        except Exception as failure:  # the task's owner gets it through the future
            log.exception("phrase cache background task failed")
            task.future.set_exception(failure)
        with self._cond:
            self._busy -= 1
            self._background.step_done(task, finished)
            self._upkeep.job_done(self._clock())
            self._cond.notify_all()
