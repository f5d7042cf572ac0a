"""The lifecycle of one client connection, written once for every protocol.

A connection is made of three parts:

* a ``Transport``: the callables that move frames (``receive``, ``send``, ``close``), written
  once per kind of socket (Starlette WebSocket, asyncio TCP); they do nothing else;
* a ``WireProtocol``: turns frames into session calls and session events into frames, with no
  I/O (``voxflow.transports.<name>.protocol``); it and the other wire types are
  ``voxflow.connection.wire``'s;
* the connection's ``SessionDriver``, which carries the session's commands to the scheduler and
  its events into a bounded outbox.

``run_connection`` runs them:

* the reader hands every frame to the protocol, in order, and sends the answer the protocol
  gives at once, if any (Wyoming's ``info`` needs no session event); when the peer is gone it asks
  the protocol whether an answer is still owed (a Wyoming client that half-closed after a request);
* the writer takes events from the outbox, asks the protocol for their frames and sends them,
  each send bounded by the write timeout; a reply that closes the connection ends it;
* a client that stops reading (the outbox fills, or one send outlasts the timeout) is closed
  with the protocol's stall close;
* the protocol's timer (an inactivity timeout) fires when its deadline passes;
* when the server's drain time is over (``RunnerSettings.stopping``), the protocol's
  ``shutdown`` reply is sent, within ``final_message_s``, and closes the connection.

Whatever ends first ends the connection. Teardown then cancels the rest, stops the session's work
(its streams are cancelled as a client cancel would) and closes the transport, all within
``teardown_s``: a task that does not end in time is logged and left cancelled, never awaited
forever, so a handler always returns.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from voxflow.connection.driver import SessionDriver
from voxflow.connection.wire import Close, PeerGone, Reply, Transport, WireProtocol

__all__ = ["RunnerSettings", "StopSignal", "run_connection"]

log = logging.getLogger(__name__)

FrameIn = TypeVar("FrameIn")
FrameOut = TypeVar("FrameOut")


class StopSignal:
    """Set once, when the server's drain time is over; every connection waits for it.

    It also counts the connections whose last words have not gone out yet (``owed``): after
    setting it, the drain waits for them, because uvicorn's own shutdown, which comes next,
    closes every WebSocket at once with a bare 1012, and a last message still waiting behind a
    slow send would be lost.

    Not an ``asyncio.Event``: an event belongs to the first loop that waits on it, and the
    services that own this signal may outlive a loop (a test's ``asyncio.run``)."""

    def __init__(self) -> None:
        self._set = False
        self._waiters: set[asyncio.Future[None]] = set()
        self._owed = 0

    def is_set(self) -> bool:
        return self._set

    @property
    def owed(self) -> int:
        """Connections still to send their last words (or to end without them)."""
        return self._owed

    def owe_last_words(self) -> Callable[[], None]:
        """Count one connection as owing its last words; the callable returned (idempotent)
        says they went out, timed out or are owed no more (the connection ended first)."""
        self._owed += 1
        paid = False

        def pay() -> None:
            nonlocal paid
            if not paid:
                paid = True
                self._owed -= 1

        return pay

    async def said(self, within_s: float) -> bool:
        """Wait until no connection owes its last words, for at most ``within_s``; True when
        none does."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        while self._owed > 0 and loop.time() < deadline:
            await asyncio.sleep(0.01)
        return self._owed == 0

    def set(self) -> None:
        self._set = True
        for waiter in list(self._waiters):
            waiter.get_loop().call_soon_threadsafe(_wake, waiter)

    async def wait(self) -> None:
        if self._set:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await waiter
        finally:
            self._waiters.discard(waiter)


def _nothing() -> None:
    pass


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass(frozen=True)
class RunnerSettings:
    write_timeout_s: float = 10.0  # one send taking longer means the client stopped reading
    teardown_s: float = 2.0  # bound on cancelling the tasks and closing the transport
    # Set when the server's drain time is over: every connection ends with ``shutdown``'s reply.
    stopping: StopSignal | None = None
    final_message_s: float = 1.0  # bound on sending that reply (a client may not be reading)


_STOP_TASK = "voxflow-stop"


class _End(enum.Enum):
    PEER_GONE = "peer gone"
    CLOSE = "closed by reply"
    STALLED = "client stopped reading"
    STOPPED = "the server stopped before its last words went out"
    FAILED = "failed"


async def run_connection(
    driver: SessionDriver,
    protocol: WireProtocol[FrameIn, FrameOut],
    transport: Transport[FrameIn, FrameOut],
    settings: RunnerSettings,
) -> None:
    """Serve one connection until it ends (see the module docstring); always returns."""
    close: Close | None = None
    outcome: list[tuple[_End, Close | None]] = []
    sending = asyncio.Lock()  # the reader's answers and the writer's replies never interleave

    async def send(reply: Reply[FrameOut]) -> bool:
        """Send ``reply``'s frames; True when it closes the connection. Nothing follows a
        reply that closes it (the last words at shutdown, with the writer's next audio
        waiting for its turn): a later one is dropped, and True says the connection is
        closing."""
        async with sending:
            if any(end is _End.CLOSE for end, _ in outcome):
                return True
            for frame in reply.frames:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel
                # that lands as the send completes, and the writer then never ends.
                async with asyncio.timeout(settings.write_timeout_s):
                    await transport.send(frame)
            if reply.close is not None:
                outcome.append((_End.CLOSE, reply.close))
                return True
        return False

    async def read() -> None:
        while True:
            frame = await transport.receive()
            if frame is None:
                if protocol.peer_gone():
                    outcome.append((_End.PEER_GONE, None))
                    return
                await asyncio.Event().wait()  # the writer finishes the answer owed
            else:
                answer = protocol.receive(frame)
                if answer is not None and await send(answer):
                    return

    async def write() -> None:
        while True:
            event = await driver.outbound.get()
            if await send(protocol.reply(driver.sent(event) or event)):
                return

    async def watch() -> None:
        while True:
            deadline = protocol.deadline()
            if deadline is None:
                await asyncio.Event().wait()  # no deadline: nothing to watch
                return
            remaining = deadline - driver.now()
            if remaining <= 0:
                protocol.expire()
                # Expiring sent the protocol's answer; wait for the next deadline, if any.
                if protocol.deadline() == deadline:
                    return
            else:
                await asyncio.sleep(remaining)

    async def stall() -> None:
        await driver.stalled.wait()

    stopping = settings.stopping
    said_last_words = stopping.owe_last_words() if stopping is not None else _nothing

    async def stop() -> None:
        if stopping is None:
            await asyncio.Event().wait()  # never: this server does not drain
            return
        await stopping.wait()
        try:
            # Bounded by its own timeout, not the write timeout: shutdown must end in time.
            async with asyncio.timeout(settings.final_message_s):
                await send(protocol.shutdown())
        finally:
            said_last_words()

    tasks = {
        asyncio.create_task(read(), name="voxflow-read"),
        asyncio.create_task(write(), name="voxflow-write"),
        asyncio.create_task(stall(), name="voxflow-stall"),
        asyncio.create_task(watch(), name="voxflow-timer"),
        asyncio.create_task(stop(), name=_STOP_TASK),
    }
    end = _End.FAILED
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        end, close = _outcome(done, outcome, driver, protocol)
        if end is _End.STALLED:
            log.warning("closing a client that stopped reading")
    finally:
        said_last_words()  # ended before the stop, or its last words are out
        await _teardown(tasks, driver, settings.teardown_s)
    try:
        if close is not None:
            # Only a client that stopped reading is dropped when its close cannot go out: one
            # that is slow at shutdown gets what is buffered for it when the process exits.
            may_abort = end is _End.STALLED
            await _close_transport(transport, close, settings.teardown_s, may_abort)
    finally:
        # What this connection buffered (audio for a slow reader: megabytes) is free now, after
        # the workers' last trim: return it (docs/reliability.md, the slow readers).
        driver.release_memory_soon()


async def _close_transport(
    transport: Transport[FrameIn, FrameOut], close: Close, teardown_s: float, may_abort: bool
) -> None:
    """Close the transport within ``teardown_s``. The close runs as its own task: a close that
    ignores its cancel (a stuck socket library) is left behind and logged, never awaited."""

    async def closed() -> None:
        await transport.close(close)

    closing = asyncio.create_task(closed(), name="voxflow-close")
    try:
        done, _ = await asyncio.wait({closing}, timeout=teardown_s)
    finally:
        closing.cancel()  # no-op once done; the handler's own cancel stops the close too
    if not done:
        if transport.abort is None or not may_abort:
            log.warning("closing the transport took longer than %.1f s; left cancelled", teardown_s)
        else:
            log.warning("closing the transport took longer than %.1f s; aborted it", teardown_s)
            transport.abort()
        return
    error = None if closing.cancelled() else closing.exception()
    if error is not None and not isinstance(error, PeerGone):
        # PeerGone: the peer left first, the connection is over all the same. Anything else is
        # a bug in the transport adapter: logged, and the handler still returns.
        log.error("closing the transport failed", exc_info=error)


def _outcome(
    done: set[asyncio.Task[None]],
    outcome: list[tuple[_End, Close | None]],
    driver: SessionDriver,
    protocol: WireProtocol[FrameIn, FrameOut],
) -> tuple[_End, Close | None]:
    """Why the connection ends, and how to close it."""
    for task in done:
        if task.cancelled():
            continue
        error = task.exception()
        if isinstance(error, TimeoutError):
            if task.get_name() == _STOP_TASK:
                return _End.STOPPED, protocol.stall_close  # past the final-message bound
            return _End.STALLED, protocol.stall_close  # one send outlasted the write timeout
        if isinstance(error, PeerGone):
            return _End.PEER_GONE, None
        if error is not None:
            return _End.FAILED, protocol.failure_close  # logged by the teardown
    if driver.stalled.is_set():
        return _End.STALLED, protocol.stall_close
    return outcome[0] if outcome else (_End.PEER_GONE, None)


async def _teardown(
    tasks: set[asyncio.Task[None]], driver: SessionDriver, teardown_s: float
) -> None:
    try:
        for task in tasks:
            task.cancel()
        _, pending = await asyncio.wait(tasks, timeout=teardown_s)
        for task in pending:
            # A task that ignores its cancel (it should not exist): log it, never wait forever.
            log.error("connection task %s did not end within %.1f s", task.get_name(), teardown_s)
        for task in tasks - pending:
            error = None if task.cancelled() else task.exception()
            if error is not None and not isinstance(error, TimeoutError | PeerGone):
                # A bug in a protocol or the driver: the connection closes; never silently.
                log.error("connection task %s failed", task.get_name(), exc_info=error)
    finally:
        # Even when the handler itself is cancelled mid-teardown, the session's streams stop.
        await driver.close()
