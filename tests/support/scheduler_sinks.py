"""Sinks that collect what the scheduler's streams send, for tests that run a real scheduler."""

from __future__ import annotations

import threading

import numpy as np

from voxflow.engines.base import FloatArray
from voxflow.runtime.jobs import Drained, Prepared, Rendered, SchedulerEvent, SegmentRequest, Sink
from voxflow.runtime.scheduler import Scheduler


class Recorder:
    """A thread-safe sink that remembers events (with the stream they came from)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, SchedulerEvent]] = []
        self.lock = threading.Lock()
        self.done = threading.Event()

    def sink(self, name: str) -> Sink:
        def receive(event: SchedulerEvent) -> None:
            with self.lock:
                self.events.append((name, event))
            if isinstance(event, Drained):
                self.done.set()

        return receive

    def of(self, name: str) -> list[SchedulerEvent]:
        with self.lock:
            return [e for n, e in self.events if n == name]


class DrainedStream:
    """One stream run to its end: ``requests`` submitted, input closed, every event kept."""

    def __init__(self, scheduler: Scheduler, requests: list[SegmentRequest]) -> None:
        self.events: list[SchedulerEvent] = []
        self.done = threading.Event()
        handle = scheduler.open_stream(self._sink)
        for request in requests:
            handle.submit(request)
        handle.close_input()
        assert self.done.wait(60), "the stream did not drain"

    def _sink(self, event: SchedulerEvent) -> None:
        self.events.append(event)
        if isinstance(event, Drained):
            self.done.set()

    def audio(self, tag: int) -> FloatArray:
        windows = [e for e in self.events if isinstance(e, Rendered) and e.tag == tag]
        return np.concatenate([w.audio for w in windows])

    def prepared(self, tag: int) -> Prepared:
        return next(e for e in self.events if isinstance(e, Prepared) and e.tag == tag)
