"""The asyncio adapter around one ``Session``: runs its commands, carries its events out.

Every transport connection owns one driver. The driver

* executes the session's runtime commands against the shared ``Scheduler`` (open, submit, close,
  cancel a stream);
* brings scheduler results from worker threads onto the event loop (``call_soon_threadsafe``) and
  feeds them to the session;
* runs the session's encoder steps on a thread pool (``EncodeLanes``), each stream's in order,
  and feeds their results to the session;
* puts client events on a queue that the transport's writer drains, bounded in bytes: above
  ``outbox_bytes`` the connection's streams stop rendering (``StreamHandle.hold``) until the
  client has read half of it, so a client that reads slowly (a player reading an HTTP answer at
  playback speed) paces its own rendering, and one that stops reading costs no more than that;
  past ``STALL_FACTOR`` times it (what was already in flight when the streams stopped) the
  driver marks itself ``stalled`` so the transport can close it;
* runs the idle-flush timer.

The session calls ``dispatch`` itself after every call (``Session.on_output``), so protocols
call the session and nothing else.

It never runs inference or encodes audio, and never blocks the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace

from voxflow.connection.encode_lanes import EncodeLanes
from voxflow.connection.stream_metrics import StreamMetrics
from voxflow.runtime.jobs import Drained, SchedulerEvent, SegmentRequest
from voxflow.runtime.scheduler import Scheduler, StreamHandle
from voxflow.session.encoding import Encoded
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    CancelStream,
    ClientEvent,
    CloseStream,
    DoneOut,
    EncodeAudio,
    OpenStream,
    PrefetchSegment,
    SubmitSegment,
    TimestampsOut,
)
from voxflow.session.session import Session

log = logging.getLogger(__name__)


# What a connection may hold past its outbox's size before it counts as not reading: the
# windows its streams had in flight when they were held.
STALL_FACTOR = 4
_EVENT_BYTES = 256  # an event without audio, as it goes on the wire (about)
_WORD_BYTES = 96  # a word's timing


def wire_bytes(event: ClientEvent) -> int:
    """About what ``event`` takes on the wire: audio as base64 (the JSON protocols' form, the
    largest), a word timing as a JSON object."""
    if isinstance(event, AudioOut):
        return (len(event.data) + 2) // 3 * 4 + _EVENT_BYTES
    if isinstance(event, TimestampsOut):
        return _WORD_BYTES * len(event.words) + _EVENT_BYTES
    return _EVENT_BYTES


class Outbox:
    """A FIFO of client events bounded in bytes (``wire_bytes``) that can drop a cancelled
    context's queued audio. ``on_full(True)`` once it holds more than ``size`` bytes, and
    ``on_full(False)`` once it is down to half that again."""

    def __init__(self, size: int, on_full: Callable[[bool], None] = lambda _full: None) -> None:
        self._items: deque[tuple[ClientEvent, int]] = deque()
        self._size = size
        self._on_full = on_full
        self._full = False
        self.bytes = 0
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def full(self) -> bool:
        return self._full

    def put(self, event: ClientEvent) -> bool:
        """Queue ``event``; False (and nothing queued) past ``STALL_FACTOR`` times its size:
        the client does not read."""
        size = wire_bytes(event)
        if self.bytes + size > STALL_FACTOR * self._size:
            return False
        self._items.append((event, size))
        self.bytes += size
        self._ready.set()
        self._check()
        return True

    def purge(self, context_id: str) -> None:
        """Drop queued audio and timestamps of ``context_id``: its client will never play them."""
        self._items = deque(
            (e, n)
            for e, n in self._items
            if not (isinstance(e, AudioOut | TimestampsOut) and e.context_id == context_id)
        )
        self.bytes = sum(n for _, n in self._items)
        self._check()

    async def get(self) -> ClientEvent:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        event, size = self._items.popleft()
        self.bytes -= size
        self._check()
        return event

    def _check(self) -> None:
        if not self._full and self.bytes > self._size:
            self._full = True
            self._on_full(True)
        elif self._full and self.bytes <= self._size // 2:
            self._full = False
            self._on_full(False)


class SessionDriver:
    def __init__(
        self,
        session: Session,
        scheduler: Scheduler,
        metrics: StreamMetrics,
        outbox_bytes: int = 1 << 20,
        clock: Callable[[], float] = time.monotonic,
        encoder_pool: Executor | None = None,
        protocol: str = "native",
    ) -> None:
        self._protocol = protocol  # the metrics' label
        self.session = session
        self._scheduler = scheduler
        self._metrics = metrics
        self._clock = clock
        self._loop = asyncio.get_running_loop()
        self._streams: dict[int, StreamHandle] = {}
        self._encoding = EncodeLanes(self._loop, encoder_pool, self._on_encoded)
        self._last_audio: dict[str, float] = {}
        self.outbound = Outbox(outbox_bytes, self._hold_streams)
        self.stalled = asyncio.Event()
        self._wake = asyncio.Event()
        self._timer = asyncio.create_task(self._idle_flush_loop(), name="voxflow-idle-flush")
        self._closed = False
        session.on_output = self.dispatch

    def now(self) -> float:
        return self._clock()

    def dispatch(self) -> None:
        """Carry out everything the session has output since the last call."""
        for output in self.session.drain():
            if isinstance(output, OpenStream):
                serial = output.serial
                handle = self._scheduler.open_stream(
                    self._sink(serial),
                    paced=output.paced,
                    burst_s=output.burst_s,
                    voice=output.voice or None,
                )
                if self.outbound.full:
                    handle.hold(True)
                self._streams[serial] = handle
                self._metrics.observe_stream_opened(
                    self._protocol, output.output_format, output.voice
                )
            elif isinstance(output, SubmitSegment):
                self._streams[output.serial].submit(output.request)
            elif isinstance(output, PrefetchSegment):
                self._prefetch(output.request)
            elif isinstance(output, CloseStream):
                self._streams[output.serial].close_input()
            elif isinstance(output, CancelStream):
                self._encoding.drop(output.serial)
                stream = self._streams.pop(output.serial, None)
                if stream is not None:
                    stream.cancel()
                    self._metrics.observe_stream_ended()
            elif isinstance(output, EncodeAudio):
                self._encoding.submit(output.serial, output.job)
            else:
                self._emit(output)
        self._wake.set()

    def _hold_streams(self, full: bool) -> None:
        """The outbox filled up (or has room again): hold this connection's streams (or let
        them go on)."""
        for stream in self._streams.values():
            stream.hold(full)

    def _prefetch(self, request: SegmentRequest) -> None:
        # Its outcome is the cache's business: a failure is logged by the scheduler, and the
        # listener who later asks for the phrase gets it rendered then.
        self._scheduler.prefetch(request)

    def _emit(self, event: ClientEvent) -> None:
        now = self._clock()
        if isinstance(event, AudioOut):
            last = self._last_audio.get(event.context_id)
            if last is not None:
                self._metrics.observe_chunk_gap(now - last)
            self._last_audio[event.context_id] = now
            self._metrics.observe_quiet(event.quiet_s)
        elif isinstance(event, DoneOut | CancelledOut):
            self._last_audio.pop(event.context_id, None)
            if isinstance(event, DoneOut) and event.metrics.ttfa_ms is not None:
                self._metrics.observe_first_audio(
                    self._protocol, event.metrics.ttfa_ms / 1000.0, event.metrics.first_cached
                )
            if isinstance(event, CancelledOut):
                # Audio still queued for a cancelled context would only delay `cancelled`.
                self.outbound.purge(event.context_id)
        if self.stalled.is_set():
            return
        if not self.outbound.put(event):
            log.warning(
                "client is not reading; %d events (%d bytes) queued",
                len(self.outbound),
                self.outbound.bytes,
            )
            self.stalled.set()

    def sent(self, event: ClientEvent) -> CancelledOut | None:
        """Tell the driver ``event`` is about to go out; a ``CancelledOut`` comes back with its
        latency measured up to now (and observed in the metrics)."""
        if not isinstance(event, CancelledOut):
            return None
        latency_s = max(0.0, self._clock() - event.requested_at)
        self._metrics.observe_cancel(latency_s)
        return replace(event, latency_ms=1000.0 * latency_s)

    def _sink(self, serial: int) -> Callable[[SchedulerEvent], None]:
        def deliver(event: SchedulerEvent) -> None:
            self._loop.call_soon_threadsafe(self._on_synthesis, serial, event)

        return deliver

    def _on_synthesis(self, serial: int, event: SchedulerEvent) -> None:
        if self._closed:
            return
        if isinstance(event, Drained) and self._streams.pop(serial, None) is not None:
            # The scheduler forgot the stream when it drained; so do we.
            self._metrics.observe_stream_ended()
        self.session.synthesis_event(serial, event, self._clock())

    def _on_encoded(self, serial: int, result: Encoded | BaseException) -> None:
        if self._closed:
            return
        if isinstance(result, BaseException):
            # An encoder bug: that context fails with an error event; the connection goes on.
            log.error("encoding failed for stream %d", serial, exc_info=result)
            self.session.encode_failed(serial, str(result))
        else:
            self.session.encoded(serial, result, self._clock())

    async def _idle_flush_loop(self) -> None:
        while True:
            deadline = self.session.next_deadline()
            self._wake.clear()
            timeout = None if deadline is None else max(0.0, deadline - self._clock())
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel that
            # lands as the awaited thing completes, and the task then never ends.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            if deadline is not None and self._clock() >= deadline:
                self.session.poll(self._clock())

    def release_memory_soon(self) -> None:
        """The connection is over and its buffers are gone: have its cycles collected and the
        freed memory returned."""
        self._scheduler.trim_soon(collect=True)

    async def close(self) -> None:
        """Stop all of this client's work (idempotent)."""
        if self._closed:
            return
        self.session.close()
        self._closed = True
        self._encoding.close()
        self._timer.cancel()
        # The timer honours its cancel at once; the bound only keeps teardown finite.
        await asyncio.wait({self._timer}, timeout=1.0)
