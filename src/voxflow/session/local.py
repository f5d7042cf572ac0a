"""Drive a ``Session`` against a ``Scheduler`` in this process, without a network or event loop.

The same job a transport's driver does (open, submit, close and cancel streams; feed the
scheduler's results back; fire the idle and look-ahead timers), done synchronously by the calling
thread: for one-shot synthesis, benchmarks and tests that want the server's exact synthesis path.
Results come from worker threads through a queue; the caller's thread alone touches the session.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from dataclasses import dataclass

from voxflow.runtime.jobs import SchedulerEvent
from voxflow.runtime.scheduler import Scheduler, StreamHandle
from voxflow.session.events import (
    CancelledOut,
    CancelStream,
    ClientEvent,
    CloseStream,
    DoneOut,
    ErrorOut,
    OpenStream,
    SubmitSegment,
)
from voxflow.session.session import Session

__all__ = ["LocalRunner", "RunTimeout"]


class RunTimeout(TimeoutError):
    """The context did not finish in time."""


@dataclass(frozen=True)
class _Result:
    serial: int
    event: SchedulerEvent


class LocalRunner:
    """Carries a session's commands to a scheduler and its results back, on the caller's thread."""

    def __init__(
        self, session: Session, scheduler: Scheduler, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.session = session
        self._scheduler = scheduler
        self._clock = clock
        self._results: queue.SimpleQueue[_Result] = queue.SimpleQueue()
        self._streams: dict[int, StreamHandle] = {}
        self.events: list[ClientEvent] = []  # every client event so far, in order
        # The scheduler result that ``step`` applied last (its client events are the ones that
        # step returned): lets a benchmark see which request a word timing came from.
        self.last_result: SchedulerEvent | None = None

    def now(self) -> float:
        return self._clock()

    def dispatch(self) -> list[ClientEvent]:
        """Carry out what the session output since the last call; return its client events."""
        out: list[ClientEvent] = []
        for output in self.session.drain():
            if isinstance(output, OpenStream):
                self._streams[output.serial] = self._scheduler.open_stream(
                    self._sink(output.serial), paced=output.paced, burst_s=output.burst_s
                )
            elif isinstance(output, SubmitSegment):
                self._streams[output.serial].submit(output.request)
            elif isinstance(output, CloseStream):
                self._streams[output.serial].close_input()
            elif isinstance(output, CancelStream):
                stream = self._streams.pop(output.serial, None)
                if stream is not None:
                    stream.cancel()
            else:
                out.append(output)
        self.events.extend(out)
        return out

    def step(self, timeout: float) -> list[ClientEvent]:
        """Wait up to ``timeout`` seconds for one scheduler result or a timer, apply it, and
        return the client events it caused."""
        deadline = self.session.next_deadline()
        wait = timeout if deadline is None else max(0.0, min(timeout, deadline - self._clock()))
        try:
            result = self._results.get(timeout=wait)
        except queue.Empty:
            self.last_result = None
            if deadline is not None and self._clock() >= deadline:
                self.session.poll(self._clock())
            return self.dispatch()
        self.last_result = result.event
        self.session.synthesis_event(result.serial, result.event, self._clock())
        return self.dispatch()

    def until_finished(self, context_id: str, timeout: float = 60.0) -> list[ClientEvent]:
        """Step until ``context_id`` is done, cancelled or failed; its events, in order."""
        out = self.dispatch()
        end = self._clock() + timeout
        while not any(_ends(event, context_id) for event in out):
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


def _ends(event: ClientEvent, context_id: str) -> bool:
    if isinstance(event, DoneOut | CancelledOut):
        return event.context_id == context_id
    return isinstance(event, ErrorOut) and event.context_id == context_id
