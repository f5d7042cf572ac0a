"""Runs the encoder steps of a connection's streams off the event loop, each stream in order.

A stream's steps share one stateful encoder, so they run one after the other; different
streams run side by side on the pool. Results come back onto the event loop in the order the
steps were queued. A dropped stream (cancelled, or its client gone) loses its queued steps, and
the result of a step still running is thrown away.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future

from voxflow.session.encoding import Encoded, EncodeJob

__all__ = ["EncodeLanes"]

log = logging.getLogger(__name__)

Deliver = Callable[[int, Encoded | BaseException], None]


class EncodeLanes:
    """One FIFO of encode jobs per stream serial; call every method on the event loop."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, executor: Executor | None, deliver: Deliver
    ) -> None:
        self._loop = loop
        self._executor = executor  # None: the loop's default executor
        self._deliver = deliver
        self._queues: dict[int, deque[EncodeJob]] = {}
        self._running: set[int] = set()
        self._closed = False

    def __len__(self) -> int:
        """Streams with a step queued or running."""
        return len(self._queues)

    def submit(self, serial: int, job: EncodeJob) -> None:
        if self._closed:
            return
        self._queues.setdefault(serial, deque()).append(job)
        if serial not in self._running:
            self._start(serial)

    def drop(self, serial: int) -> None:
        """Forget the stream's queued steps; a running one's result is thrown away."""
        self._queues.pop(serial, None)

    def close(self) -> None:
        self._closed = True
        self._queues.clear()

    def _start(self, serial: int) -> None:
        queue = self._queues.get(serial)
        if not queue:
            self._queues.pop(serial, None)
            return
        job = queue.popleft()
        self._running.add(serial)
        try:
            future = self._loop.run_in_executor(self._executor, job.run)
        except RuntimeError as error:  # the pool is shut down: the server is stopping
            self._running.discard(serial)
            self._queues.pop(serial, None)
            self._deliver(serial, error)
            return
        future.add_done_callback(lambda done: self._finished(serial, done))

    def _finished(self, serial: int, future: Future[Encoded] | asyncio.Future[Encoded]) -> None:
        self._running.discard(serial)
        if self._closed or serial not in self._queues:
            return  # dropped while it ran
        if future.cancelled():
            self._queues.pop(serial, None)
            return
        error = future.exception()
        self._deliver(serial, error if error is not None else future.result())
        if serial not in self._running:  # delivering may have queued and started the next step
            self._start(serial)
