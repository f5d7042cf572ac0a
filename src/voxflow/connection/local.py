"""Drive a ``Session`` against a ``Scheduler`` in this process, without a network or event loop.

The same job a transport's driver does (open, submit, close and cancel streams; feed the
scheduler's results back; fire the idle and look-ahead timers), done synchronously by the calling
thread: for one-shot synthesis, benchmarks and tests that want the server's exact synthesis path.
Results come from worker threads through a queue; the caller's thread alone touches the session.
Another thread that has something for the session (text as it arrives) hands it over the same
queue (``call_soon_threadsafe``), as a server's transport hands messages to its event loop.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from voxflow.runtime.jobs import SchedulerEvent, SegmentRequest
from voxflow.runtime.scheduler import Scheduler, StreamHandle
from voxflow.session.events import (
    CancelledOut,
    CancelStream,
    ClientEvent,
    CloseStream,
    DoneOut,
    EncodeAudio,
    ErrorOut,
    OpenStream,
    PrefetchSegment,
    SubmitSegment,
)
from voxflow.session.session import Session

__all__ = ["LocalRunner", "RunTimeout", "drain_encoded"]

log = logging.getLogger(__name__)


class RunTimeout(TimeoutError):
    """The context did not finish in time."""


@dataclass(frozen=True)
class _Result:
    serial: int
    event: SchedulerEvent


@dataclass(frozen=True)
class _Call:
    run: Callable[[], None]


class LocalRunner:
    """Carries a session's commands to a scheduler and its results back, on the caller's thread."""

    def __init__(
        self, session: Session, scheduler: Scheduler, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.session = session
        self._scheduler = scheduler
        self._clock = clock
        self._results: queue.SimpleQueue[_Result | _Call] = queue.SimpleQueue()
        self._streams: dict[int, StreamHandle] = {}
        self.events: list[ClientEvent] = []  # every client event so far, in order
        self.submitted: list[SegmentRequest] = []  # every engine request so far, in order
        self.prefetched: list[Future[str]] = []  # every prefetch so far (``Session.prefetch``)
        self._ended: set[str] = set()  # contexts that are done, cancelled or failed
        # The scheduler result that ``step`` applied last (its client events are the ones that
        # step returned): tells which request a word timing came from (``LocalSpeaker``).
        self.last_result: SchedulerEvent | None = None

    def now(self) -> float:
        return self._clock()

    def dispatch(self) -> list[ClientEvent]:
        """Carry out what the session output since the last call; return its client events."""
        out: list[ClientEvent] = []
        for output in drain_encoded(self.session, self._clock):
            if isinstance(output, OpenStream):
                self._streams[output.serial] = self._scheduler.open_stream(
                    self._sink(output.serial),
                    paced=output.paced,
                    burst_s=output.burst_s,
                    voice=output.voice or None,
                )
            elif isinstance(output, SubmitSegment):
                self._streams[output.serial].submit(output.request)
                self.submitted.append(output.request)
            elif isinstance(output, PrefetchSegment):
                self.prefetched.append(self._scheduler.prefetch(output.request))
            elif isinstance(output, CloseStream):
                self._streams[output.serial].close_input()
            elif isinstance(output, CancelStream):
                stream = self._streams.pop(output.serial, None)
                if stream is not None:
                    stream.cancel()
            else:
                out.append(output)
                ended = _ended_context(output)
                if ended is not None:
                    self._ended.add(ended)
        self.events.extend(out)
        return out

    def finished(self, context_id: str) -> bool:
        """Whether ``context_id`` is done, cancelled or failed (as dispatched so far)."""
        return context_id in self._ended

    def call_soon_threadsafe(self, call: Callable[[], None]) -> None:
        """Have the stepping thread run ``call`` (from any thread): its next ``step`` does, in
        turn with the scheduler's results, and returns the client events it caused. An error
        it raises comes out of that ``step``."""
        self._results.put(_Call(call))

    def step(self, timeout: float) -> list[ClientEvent]:
        """Wait up to ``timeout`` seconds for one scheduler result, a call handed over or a
        timer, apply it, and return the client events it caused."""
        deadline = self.session.next_deadline()
        wait = timeout if deadline is None else max(0.0, min(timeout, deadline - self._clock()))
        try:
            item = self._results.get(timeout=wait)
        except queue.Empty:
            self.last_result = None
            if deadline is not None and self._clock() >= deadline:
                self.session.poll(self._clock())
            return self.dispatch()
        if isinstance(item, _Call):
            self.last_result = None
            item.run()
            return self.dispatch()
        self.last_result = item.event
        self.session.synthesis_event(item.serial, item.event, self._clock())
        return self.dispatch()

    def until_finished(self, context_id: str, timeout: float = 60.0) -> list[ClientEvent]:
        """Step until ``context_id`` is done, cancelled or failed; its events, in order."""
        out = self.dispatch()
        end = self._clock() + timeout
        while not self.finished(context_id):
            left = end - self._clock()
            if left <= 0:
                raise RunTimeout(f"context {context_id!r} did not finish in {timeout} s")
            out.extend(self.step(left))
        return [e for e in out if getattr(e, "context_id", context_id) == context_id]

    def close(self) -> None:
        """Stop every stream of the session (idempotent)."""
        self.session.close()
        self.dispatch()

    def _sink(self, serial: int) -> Callable[[SchedulerEvent], None]:
        def deliver(event: SchedulerEvent) -> None:
            self._results.put(_Result(serial, event))

        return deliver


DrainedOutput = (
    ClientEvent | OpenStream | SubmitSegment | PrefetchSegment | CloseStream | CancelStream
)


def drain_encoded(session: Session, clock: Callable[[], float]) -> list[DrainedOutput]:
    """The session's outputs, with its encoder steps run here, on the caller's thread, and their
    results fed back at once (a server's driver runs them on a pool thread instead); what the
    results output is included, in order."""
    out: list[DrainedOutput] = []
    while outputs := session.drain():
        for output in outputs:
            if not isinstance(output, EncodeAudio):
                out.append(output)
                continue
            try:
                result = output.job.run()
            except Exception as error:  # an encoder bug: this context fails, logged
                log.exception("encoding failed for stream %d", output.serial)
                session.encode_failed(output.serial, str(error))
            else:
                session.encoded(output.serial, result, clock())
    return out


def _ended_context(event: ClientEvent) -> str | None:
    """The context that ``event`` ends (done, cancelled, or an error about it), if any."""
    if isinstance(event, DoneOut | CancelledOut | ErrorOut):
        return event.context_id
    return None
