"""Deadline scheduler: many streams' synthesis cut into small jobs, run by a few worker threads.

A stream is a queue of segments to speak in order. Its work is cut into jobs: one *prepare* per
segment (phonemization + text stage) and one *render* per window of latent frames. At most one job
of a stream runs at a time, so its audio comes out in order. Every ready stream has a deadline:

* before it has produced audio in this turn: the moment its work became ready (so a new stream's
  first window jumps ahead of streams that hold audio in hand, which are due later);
* after: the moment its client would run out of audio, assuming playback began when the first audio
  of the turn was produced (``playback_end``).

Workers always take the stream with the earliest deadline. Windows start at ``first_window_frames``
(fast first audio) and double while the stream is at least ``grow_lead_s`` ahead of playback
(larger windows waste less overlap); a stream that falls behind goes back to small windows. Streams
more than ``max_lead_s`` ahead wait, which bounds the audio buffered toward any client.

Cancelling drops a stream's queued work at once; a job already running finishes and its result is
discarded. Events go to the stream's sink from worker threads, in order, while the scheduler's lock
is held: sinks must be quick and thread-safe (``loop.call_soon_threadsafe`` is the intended one).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from voxflow.engines.base import Engine, FloatArray, Utterance, VoiceSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SchedulerSettings:
    workers: int = 2
    first_window_frames: int = 16
    max_window_frames: int = 256
    grow_lead_s: float = 0.25
    max_lead_s: float = 20.0

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("workers must be >= 1")
        if not 1 <= self.first_window_frames <= self.max_window_frames:
            raise ValueError("need 1 <= first_window_frames <= max_window_frames")
        if self.max_lead_s <= 0 or self.grow_lead_s < 0:
            raise ValueError("max_lead_s must be > 0 and grow_lead_s >= 0")


@dataclass(frozen=True)
class SegmentRequest:
    """One segment of a stream. ``tag`` is the caller's handle, echoed in every event."""

    text: str
    voice: str
    settings: VoiceSettings
    tag: int


@dataclass(frozen=True)
class Prepared:
    tag: int
    utterance: Utterance
    compute_s: float


@dataclass(frozen=True)
class Rendered:
    tag: int
    start_frame: int
    end_frame: int
    audio: FloatArray = field(repr=False)
    last: bool  # the segment's final window
    compute_s: float
    late_s: float  # how far past its deadline it finished (0 when on time or before first audio)


@dataclass(frozen=True)
class Failed:
    tag: int
    error: Exception


@dataclass(frozen=True)
class Drained:
    """Input was closed and every submitted segment has been rendered."""


SchedulerEvent = Prepared | Rendered | Failed | Drained
Sink = Callable[[SchedulerEvent], None]


@dataclass
class _Stream:
    id: int
    sink: Sink
    pending: deque[SegmentRequest] = field(default_factory=deque)
    request: SegmentRequest | None = None
    utterance: Utterance | None = None
    next_frame: int = 0
    busy: bool = False
    queued: bool = False
    cancelled: bool = False
    input_closed: bool = False
    drained_sent: bool = False
    ready_since: float = 0.0
    first_audio_at: float | None = None
    audio_s: float = 0.0
    window: int = 0

    def has_work(self) -> bool:
        return self.utterance is not None or bool(self.pending)

    def playback_end(self) -> float | None:
        return None if self.first_audio_at is None else self.first_audio_at + self.audio_s

    def deadline(self) -> float:
        end = self.playback_end()
        return self.ready_since if end is None else max(end, self.ready_since)


class StreamHandle:
    """The caller's side of one stream."""

    def __init__(self, scheduler: Scheduler, stream: _Stream) -> None:
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


class Scheduler:
    """Worker threads running prepare/render jobs, earliest deadline first."""

    def __init__(
        self,
        engine: Engine,
        settings: SchedulerSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Stream]] = []
        self._ids = itertools.count(1)
        self._order = itertools.count()
        self._streams: dict[int, _Stream] = {}
        self._busy = 0
        self._jobs_run = 0
        self._misses = 0
        self._stopping = False
        self._threads = [
            threading.Thread(target=self._work, name=f"voxflow-worker-{i}", daemon=True)
            for i in range(settings.workers)
        ]
        for thread in self._threads:
            thread.start()

    def open_stream(self, sink: Sink) -> StreamHandle:
        with self._cond:
            if self._stopping:
                raise RuntimeError("scheduler is shut down")
            stream = _Stream(id=next(self._ids), sink=sink)
            self._streams[stream.id] = stream
        return StreamHandle(self, stream)

    def stats(self) -> SchedulerStats:
        with self._cond:
            return SchedulerStats(
                ready_streams=sum(1 for _, _, s in self._heap if s.queued and not s.cancelled),
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
                stream.cancelled = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    # -- stream operations (any thread) ---------------------------------------------------------

    def _submit(self, stream: _Stream, request: SegmentRequest) -> None:
        with self._cond:
            if stream.cancelled:
                return
            if stream.input_closed:
                raise RuntimeError("stream input is closed")
            stream.pending.append(request)
            if not stream.busy and not stream.queued:
                stream.ready_since = self._clock()
                self._push(stream)

    def _close_input(self, stream: _Stream) -> None:
        with self._cond:
            stream.input_closed = True
            self._maybe_drained(stream)

    def _cancel(self, stream: _Stream) -> None:
        with self._cond:
            stream.cancelled = True
            stream.pending.clear()
            stream.utterance = None
            self._streams.pop(stream.id, None)
            # Its heap entry is skipped when popped; the heap is rebuilt here only when stale
            # entries dominate, to keep cancel O(1) in the common case.
            if len(self._heap) > 64 and len(self._heap) > 2 * len(self._streams):
                self._heap = [e for e in self._heap if not e[2].cancelled]
                heapq.heapify(self._heap)

    # -- internals (lock held) -------------------------------------------------------------------

    def _push(self, stream: _Stream) -> None:
        stream.queued = True
        heapq.heappush(self._heap, (stream.deadline(), next(self._order), stream))
        self._cond.notify()

    def _maybe_drained(self, stream: _Stream) -> None:
        if (
            stream.input_closed
            and not stream.busy
            and not stream.has_work()
            and not stream.cancelled
            and not stream.drained_sent
        ):
            stream.drained_sent = True
            self._streams.pop(stream.id, None)
            self._deliver(stream, Drained())

    def _pop_ready(self) -> _Stream | None:
        while True:
            if self._stopping:
                return None
            while self._heap and self._heap[0][2].cancelled:
                heapq.heappop(self._heap)[2].queued = False
            if not self._heap:
                self._cond.wait()
                continue
            deadline, _, stream = self._heap[0]
            wait = deadline - self._clock() - self._settings.max_lead_s
            if wait > 0:
                self._cond.wait(timeout=wait)
                continue
            heapq.heappop(self._heap)
            stream.queued = False
            return stream

    def _next_window(self, stream: _Stream, utterance: Utterance) -> tuple[int, int]:
        settings = self._settings
        end = stream.playback_end()
        lead = 0.0 if end is None else end - self._clock()
        if stream.window == 0 or lead < settings.grow_lead_s:
            size = settings.first_window_frames
        else:
            size = min(settings.max_window_frames, stream.window * 2)
        stream.window = size
        start = stream.next_frame
        stop = min(utterance.num_frames, start + size)
        # Fold a short tail into this window: a separate one would pay a whole overlap.
        if utterance.num_frames - stop < settings.first_window_frames // 2:
            stop = utterance.num_frames
        return start, stop

    # -- worker ----------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                stream = self._pop_ready()
                if stream is None:
                    return
                stream.busy = True
                self._busy += 1
                utterance = stream.utterance
                window: tuple[int, int] | None = None
                if utterance is None:
                    stream.request = stream.pending.popleft()
                else:
                    window = self._next_window(stream, utterance)
                request = stream.request
                assert request is not None
                deadline = stream.playback_end()
            started = time.perf_counter()
            event: SchedulerEvent
            try:
                if utterance is None:
                    prepared = self._engine.prepare(request.text, request.voice, request.settings)
                    event = Prepared(request.tag, prepared, time.perf_counter() - started)
                else:
                    assert window is not None
                    audio = self._engine.render(utterance, *window)
                    event = Rendered(
                        request.tag,
                        window[0],
                        window[1],
                        audio,
                        last=window[1] == utterance.num_frames,
                        compute_s=time.perf_counter() - started,
                        late_s=0.0,
                    )
            except Exception as error:  # delivered to the stream's owner, never swallowed
                log.exception("synthesis job failed for stream %d", stream.id)
                event = Failed(request.tag, error)
            with self._cond:
                self._busy -= 1
                self._jobs_run += 1
                stream.busy = False
                if stream.cancelled:
                    continue
                self._apply(stream, event, deadline)
                if stream.has_work():
                    stream.ready_since = self._clock()
                    self._push(stream)
                else:
                    self._maybe_drained(stream)

    def _apply(self, stream: _Stream, event: SchedulerEvent, deadline: float | None) -> None:
        now = self._clock()
        if isinstance(event, Prepared):
            if event.utterance.num_frames > 0:
                stream.utterance = event.utterance
                stream.next_frame = 0
            self._deliver(stream, event)
            if event.utterance.num_frames == 0:
                # Nothing to render: report the (empty) segment as finished.
                self._deliver(
                    stream,
                    Rendered(event.tag, 0, 0, event.utterance.latents[0, :0], True, 0.0, 0.0),
                )
        elif isinstance(event, Rendered):
            late = 0.0
            if deadline is not None and now > deadline:
                late = now - deadline
                self._misses += 1
            if stream.first_audio_at is None:
                stream.first_audio_at = now
            assert stream.utterance is not None
            stream.audio_s += (event.end_frame - event.start_frame) * (
                stream.utterance.samples_per_frame / stream.utterance.sample_rate
            )
            stream.next_frame = event.end_frame
            if event.last:
                stream.utterance = None
                stream.request = None
            self._deliver(
                stream,
                Rendered(
                    event.tag,
                    event.start_frame,
                    event.end_frame,
                    event.audio,
                    event.last,
                    event.compute_s,
                    late,
                ),
            )
        elif isinstance(event, Failed):
            stream.utterance = None
            stream.request = None
            self._deliver(stream, event)

    def _deliver(self, stream: _Stream, event: SchedulerEvent) -> None:
        """Hand ``event`` to the stream's sink; a sink that fails ends its stream, not the
        worker."""
        if stream.cancelled:
            return
        try:
            stream.sink(event)
        except Exception:
            log.exception("sink of stream %d failed; cancelling the stream", stream.id)
            stream.cancelled = True
            stream.pending.clear()
            stream.utterance = None
            self._streams.pop(stream.id, None)
