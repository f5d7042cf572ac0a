"""The scheduling policy: which job the next free worker runs, and what its result means.

Pure: no thread, no lock, no engine; every call takes the time. ``Scheduler`` wraps it in a lock
and worker threads (and the phrase cache); a simulation drives it on a fake clock with jobs that
take the engines' measured costs (``tests/support/simulation``).

* Streams (``voxflow.runtime.stream``) hold their queued segments and their listener's clock;
  each lane's next job has a release time and a deadline (``StreamState.timing``).
* ``next_job`` hands out the released job with the earliest deadline (``LaneQueue``): a stream
  about to run dry comes before one with audio in hand, a fresh stream's first window before
  later arrivals' text stages. A job that would run alone may use every core
  (``SchedulerSettings.wide_threads``). ``next_job(first_audio=True)`` hands out only the
  jobs of a stream's first audio (its text stage and first window, as long as it has none
  in hand): what the scheduler's first-audio workers run, beside the others and above them,
  so that a new stream's first audio never waits for a worker on a busy machine.
* ``prepared``, ``rendered`` and ``failed`` take a job's result and return the events for the
  stream's owner, ``Drained`` last when the stream has finished (the policy then forgets it);
  ``submit`` returns the events a new request makes due (a lead it makes needless, ``Skipped``).
  Each result teaches the stream's engine cost model (``voxflow.runtime.costs``) how long such a
  job takes, and how much CPU a second of audio takes, unless it came from the phrase cache;
  the ``ledger`` (``voxflow.runtime.ledger``) counts its CPU time by what it was for.
* The ``slack`` (``voxflow.runtime.slack``) counts how long each job of a stream with audio in
  hand waited for a worker against its deadline, where it is taken, and the windows that came
  too late, where they finish: what admission learns its capacity from.
* No worker is left idle while a stream has work it may render: a job waits (its release is
  in the future) only while its stream is ``max_lead_s`` ahead of its listener, for a lead
  whose takeover has not come yet, or for the 10 ms after a phrase cache hit's first window
  (``voxflow.runtime.stream``), and never beyond what ``max_quiet_s`` allows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace

from voxflow.engines.base import FloatArray, Utterance
from voxflow.runtime.costs import START_AUDIO_S, CostModel
from voxflow.runtime.jobs import Rendered, SchedulerEvent, SegmentRequest, Sink
from voxflow.runtime.lane_queue import LaneQueue
from voxflow.runtime.ledger import WorkLedger
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.runtime.slack import SlackMeter, SlackStats
from voxflow.runtime.stream import StreamState
from voxflow.runtime.work import Job, Lane, Work

__all__ = ["SchedulingPolicy"]


class SchedulingPolicy:
    """See the module docstring."""

    def __init__(
        self, settings: SchedulerSettings, retired: Callable[[Work], None] | None = None
    ) -> None:
        """``retired``: told of each work that leaves its stream's queue (rendered to its end,
        failed or cancelled), for what is kept per work outside the policy (the phrase
        cache's)."""
        self._settings = settings
        self._retired = retired
        self._windows = settings.windows
        self._queue = LaneQueue()
        self._first_audio = LaneQueue()  # the lanes of streams with no audio in hand, again
        self._ids = itertools.count(1)
        self.streams: dict[int, StreamState] = {}
        self.misses = 0  # windows that finished after their deadline
        self.slack = SlackMeter()  # the workers' slack against the listeners (admission's signal)
        self.ledger = WorkLedger()

    @property
    def settings(self) -> SchedulerSettings:
        return self._settings

    # -- streams ---------------------------------------------------------------------------------

    def open_stream(
        self, sink: Sink, costs: CostModel, paced: bool = True, burst_s: float = 0.0
    ) -> StreamState:
        """A new stream whose jobs cost what ``costs`` says (see ``Scheduler.open_stream``)."""
        s = self._settings
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
            self._retired,
            s.max_quiet_s,
        )
        self.streams[stream.id] = stream
        return stream

    def submit(
        self, stream: StreamState, request: SegmentRequest, now: float
    ) -> list[SchedulerEvent]:
        """Queue ``request``; the events due now (a lead it makes needless is ``Skipped``)."""
        if stream.input_closed:
            raise RuntimeError("stream input is closed")
        return self.finish(stream, stream.submit(request, now), now)

    def close_input(self, stream: StreamState, now: float) -> list[SchedulerEvent]:
        """No more segments will come; the events due now (``Drained`` if all ran)."""
        stream.input_closed = True
        return self.finish(stream, [], now)

    def cancel(self, stream: StreamState) -> None:
        """Drop the stream's queued work; a job of it still running is discarded when done."""
        stream.cancel()
        self.streams.pop(stream.id, None)
        self._queue.compact(len(self.streams))
        self._first_audio.compact(len(self.streams))

    def cancel_all(self) -> None:
        for stream in self.streams.values():
            stream.cancel()
        self.streams.clear()

    def hold(self, stream: StreamState, held: bool, now: float) -> None:
        """Stop handing out ``stream``'s jobs (its owner has all it can take for now), or go
        on. A job of it already running finishes."""
        stream.held = held
        if not held and not stream.cancelled:
            if stream.quiet_since is not None:
                # Its client had not read what was sent: the silence since was the client's.
                stream.quiet_since = max(stream.quiet_since, now)
            self.requeue(stream, now)

    def requeue(self, stream: StreamState, now: float) -> bool:
        """(Re)queue each lane of ``stream`` that has a job to run; True if one was queued."""
        queued = False
        for lane in Lane:
            stream.versions[lane] += 1
            work = stream.runnable(lane)
            if work is None:
                stream.runnable_since[lane] = None
                continue
            if stream.runnable_since[lane] is None:
                stream.runnable_since[lane] = now
            timing = stream.timing(lane, work, now)
            self._queue.push(stream, lane, timing.release, timing.deadline, now)
            if lane is Lane.MAIN and stream.fresh(now):
                self._first_audio.push(stream, lane, timing.release, timing.deadline, now)
            queued = True
        return queued

    # -- what runs next --------------------------------------------------------------------------

    def next_job(
        self, now: float, busy: int, first_audio: bool = False
    ) -> tuple[StreamState, Job] | None:
        """Start the released job with the earliest deadline (None: none is released). ``busy``:
        how many workers are running a job now; one that would run alone may be wide.
        ``first_audio``: only a job on a stream's way to its first audio."""
        popped = (self._first_audio if first_audio else self._queue).pop(now)
        if popped is None:
            return None
        stream, lane, work = popped
        stream.versions[lane] += 1
        measured = self._measure(stream, lane, work, now)
        # A job due now on one core would come late: the latest start its one-core cost allows
        # has passed (the job's deadline).
        late = stream.costs.wide_windows and now >= stream.timing(lane, work, now).deadline
        job = stream.take(lane, work, now)
        if measured:
            job = replace(job, measured=True)
        if (job.playback_end is None or late) and self._alone(busy):
            job = replace(job, threads=self._settings.wide_threads)
        return stream, job

    def next_release_s(self, now: float, first_audio: bool = False) -> float | None:
        """Seconds until a queued job that waits is released (None: none waits)."""
        return (self._first_audio if first_audio else self._queue).next_release_s(now)

    def ready_streams(self) -> int:
        return self._queue.ready_streams()

    def slack_stats(self, now: float) -> SlackStats:
        """The workers' slack so far (``voxflow.runtime.slack``), with the jobs that wait past
        their deadline at ``now``."""
        return self.slack.snapshot(self._queue.overdue(now))

    def _measure(self, stream: StreamState, lane: Lane, work: Work, now: float) -> bool:
        """Count the wait of the job a worker takes now against its deadline
        (``voxflow.runtime.slack``): only a paced stream's with audio in hand. True when its
        pressure was counted."""
        since, stream.runnable_since[lane] = stream.runnable_since[lane], None
        if since is None or not stream.paced or stream.fresh(now):
            return False
        timing = stream.timing(lane, work, now)
        ready = min(now, max(since, timing.release))
        return self.slack.taken(ready, timing.deadline, now) is not None

    def _alone(self, busy: int) -> bool:
        """Whether no job runs and none waits: a job may use every core."""
        if busy or self._settings.wide_threads <= 1:
            return False
        return not self._queue.any_ready()

    # -- results ---------------------------------------------------------------------------------

    def prepared(
        self,
        stream: StreamState,
        job: Job,
        utterance: Utterance,
        compute_s: float,
        now: float,
        learn: bool = True,
        cpu_s: float | None = None,
        cached: bool = False,
    ) -> list[SchedulerEvent]:
        """A text stage finished in ``compute_s`` (``cpu_s`` of them on a core; None: all);
        ``learn``: it was computed (not a cached phrase); ``cached``: the work's windows are
        cut from a cached phrase."""
        if learn:
            stream.costs.observe_prepare(job.work.request.read_chars, compute_s)
            _observe_work(stream.costs, job, compute_s, cpu_s)
            self.ledger.text_stage(_own_cpu_s(compute_s, cpu_s), job.work.request.lead)
        _count_start(stream, _job_cpu_s(job, compute_s, cpu_s) if learn else None)
        if stream.fresh_since is not None:
            stream.first_audio_cpu_s += _job_cpu_s(job, compute_s, cpu_s) if learn else 0.0
        return self.finish(stream, stream.prepared(job, utterance, compute_s, now, cached), now)

    def rendered(
        self,
        stream: StreamState,
        job: Job,
        audio: FloatArray,
        compute_s: float,
        now: float,
        learn: bool = True,
        cpu_s: float | None = None,
    ) -> list[SchedulerEvent]:
        """A window finished in ``compute_s`` (``cpu_s`` of them on a core; None: all);
        ``learn``: it was rendered (not cut from a cached phrase)."""
        utterance = job.work.utterance
        if learn and job.window is not None and utterance is not None:
            frames = job.window[1] - job.window[0]
            stream.costs.observe_render(frames, compute_s)
            audio_s = frames * utterance.samples_per_frame / utterance.sample_rate
            _observe_work(stream.costs, job, compute_s, cpu_s, audio_s)
            self.ledger.window(
                _own_cpu_s(compute_s, cpu_s),
                job.work.request.lead,
                frames,
                stream.costs.context_frames,
                audio_s,
            )
        quiet_since, fresh_since = stream.quiet_since, stream.fresh_since
        events = stream.rendered(job, audio, compute_s, now)
        job_cpu_s = _job_cpu_s(job, compute_s, cpu_s) if learn else None
        _count_start(stream, job_cpu_s)
        if fresh_since is not None:
            stream.first_audio_cpu_s += job_cpu_s or 0.0
            if stream.fresh_since is None:  # its first audio: how long it waited for it
                waited = now - fresh_since - stream.first_audio_cpu_s
                if self._settings.first_audio_s > 0:  # (0: no wait allowed, none to measure)
                    self.slack.first_audio(waited, self._settings.first_audio_s)
                stream.first_audio_cpu_s = 0.0
        if job.measured and self._missed(events, quiet_since, now):
            self.slack.missed()
        return self.finish(stream, events, now)

    def _missed(self, events: list[SchedulerEvent], quiet_since: float | None, now: float) -> bool:
        """Whether a window's audio came after its listener ran out, or after its stream had
        owed audio for longer than ``max_quiet_s``: what the service level does not allow."""
        if any(isinstance(e, Rendered) and e.late_s > 0 for e in events):
            return True
        bound = self._settings.max_quiet_s
        return bound is not None and quiet_since is not None and now - quiet_since > bound

    def failed(
        self, stream: StreamState, job: Job, error: Exception, now: float
    ) -> list[SchedulerEvent]:
        return self.finish(stream, stream.failed(job, error), now)

    def finish(
        self, stream: StreamState, events: list[SchedulerEvent], now: float
    ) -> list[SchedulerEvent]:
        """``events`` and ``Drained`` when due (the stream is then forgotten); the stream's
        lanes are queued again."""
        self.misses += sum(1 for e in events if isinstance(e, Rendered) and e.late_s > 0)
        events = events + stream.drained()
        if stream.drained_sent:
            self.streams.pop(stream.id, None)
        if not stream.cancelled:
            self.requeue(stream, now)
        return events


def _count_start(stream: StreamState, cpu_s: float | None) -> None:
    """Add a job's CPU (None: it was cut from a phrase cache hit) to what ``stream``'s first
    second of audio took; teach its engine's cost model once it has that second
    (``CostModel.start_cost_s``, per second of what it rendered by then)."""
    if stream.start_cpu_s is None:
        return
    if cpu_s is None:
        stream.start_cpu_s = None  # a hit's start is no measure of what one costs
        return
    stream.start_cpu_s += cpu_s
    if stream.rendered_s >= START_AUDIO_S:
        stream.costs.observe_start(stream.start_cpu_s * START_AUDIO_S / stream.rendered_s)
        stream.start_cpu_s = None


def _observe_work(
    costs: CostModel, job: Job, compute_s: float, cpu_s: float | None, audio_s: float = 0.0
) -> None:
    """Teach ``costs`` what ``job`` took of the CPU (``cpu_s`` on its thread; None: all of
    ``compute_s``) for ``audio_s`` of audio. A job on several cores counts only towards the
    jobs' total: its thread's CPU time is not all it took."""
    if _wide(job):
        costs.observe_elsewhere(_job_cpu_s(job, compute_s, cpu_s))
    else:
        costs.observe_work(_job_cpu_s(job, compute_s, cpu_s), audio_s)


def _job_cpu_s(job: Job, compute_s: float, cpu_s: float | None) -> float:
    """What ``job`` took of the CPU: its thread's CPU time, or (a job on several cores, or
    none measured) its wall time on each of its threads."""
    if _wide(job) or cpu_s is None:
        return compute_s * (job.threads or 1)
    return cpu_s


def _own_cpu_s(compute_s: float, cpu_s: float | None) -> float:
    """A job's CPU time on its own thread (``compute_s`` where none was measured)."""
    return compute_s if cpu_s is None else cpu_s


def _wide(job: Job) -> bool:
    """A job that used more than one core (alone on the machine): its thread's CPU time is not
    all it took, so admission's cost does not learn from it."""
    return job.threads is not None and job.threads > 1
