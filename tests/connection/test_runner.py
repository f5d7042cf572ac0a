"""``run_connection`` under fault injection: a peer that vanishes, a peer that stops reading, a
send that fails, a protocol that raises, and a cancel at each of the runner's await points.

A fake in-memory ``Transport`` drives a real ``Session`` + ``SessionDriver`` over a real
``Scheduler`` and the real engine, through the real ``NativeProtocol``. Every case checks that
the connection ends within a generous bound, that the session's work is stopped (no open
context, no scheduler stream, the metrics gauge back to zero) and that no task the runner or
the driver created is left pending.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from voxflow.connection.driver import STALL_FACTOR, SessionDriver
from voxflow.connection.encoder_pool import EncoderPool
from voxflow.connection.runner import RunnerSettings, StopSignal, run_connection
from voxflow.connection.wire import Close, PeerGone, Transport
from voxflow.engines.piper import PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.scheduler import Scheduler
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.server.metrics import ServerMetrics
from voxflow.session.options import SessionConfig
from voxflow.session.session import Session
from voxflow.transports.native.protocol import NativeProtocol

Frame = str | bytes

SENTENCE = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget. "
)
LONG = SENTENCE * 4
# Bounds for things that take milliseconds; generous so that a busy machine cannot break them.
BOUND_S = 10.0
STREAM_TIMEOUT_S = 60.0  # first audio of a fresh stream, with the suite running beside us

STALL_CLOSE = Close(1008, "client stopped reading")
FAILURE_CLOSE = Close(1011, "internal error")


# -- fixtures --------------------------------------------------------------------------------------


@pytest.fixture
def scheduler(engine: PiperEngine) -> Iterator[Scheduler]:
    scheduler = Scheduler(engine, SchedulerSettings())
    yield scheduler
    scheduler.shutdown()


@pytest.fixture
def encoder_pool() -> Iterator[EncoderPool]:
    pool = EncoderPool(1, name="test-runner-encode")
    yield pool
    pool.shutdown(wait=True, cancel_futures=True)


# -- a fake transport ----------------------------------------------------------------------------

CloseMode = Literal["return", "block", "ignore_cancel", "peer_gone"]


async def _ignore_cancels(release: asyncio.Event, cancelled: asyncio.Event) -> None:
    """Wait for ``release``, swallowing every cancel (what a buggy library call might do)."""
    while not release.is_set():
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.set()


class FakeTransport:
    """Frames in through a queue; every way a socket can misbehave, on demand.

    ``block_send_at``/``fail_send_at``: the 1-based send call from which sends block until
    ``unblock`` is set (honouring a cancel; a peer that does not read) or raise ``send_error``
    (once ``fail_now`` is set, so that a test sees the connection mid-stream first).
    ``stubborn_receive_at``: the receive call from which receive ignores cancels until
    ``release`` is set. ``close_mode``: what ``close`` does. ``writes_first``: a send puts its
    frame out before it yields, as a socket's send writes its bytes into the buffer and then
    waits for it to drain, so that a send cancelled after its first yield has gone out.
    """

    def __init__(
        self,
        *,
        block_send_at: int | None = None,
        fail_send_at: int | None = None,
        send_error: Exception | None = None,
        stubborn_receive_at: int | None = None,
        close_mode: CloseMode = "return",
        writes_first: bool = False,
    ) -> None:
        self.incoming: asyncio.Queue[Frame | None] = asyncio.Queue()
        self.sent: list[Frame] = []
        self.closes: list[Close] = []
        self.aborts = 0
        self.receive_calls = 0
        self.send_calls = 0
        self.block_send_at = block_send_at
        self.fail_send_at = fail_send_at
        self.send_error = send_error or PeerGone("connection reset by peer")
        self.stubborn_receive_at = stubborn_receive_at
        self.close_mode = close_mode
        self.writes_first = writes_first
        self.receiving = asyncio.Event()  # a receive is waiting for a frame
        self.send_blocked = asyncio.Event()
        self.closing = asyncio.Event()
        self.release = asyncio.Event()  # ends the stubborn waits
        self.receive_cancelled = asyncio.Event()  # a stubborn receive swallowed a cancel
        self.close_cancelled = asyncio.Event()  # a stubborn close swallowed a cancel
        self.fail_now = asyncio.Event()
        self.unblock = asyncio.Event()  # the blocked peer starts reading
        # What ``probe`` saw when the first send began: the work under way mid-stream, taken
        # before any write timeout can end the connection.
        self.probe: Callable[[], tuple[int, float | None]] | None = None
        self.at_first_send: tuple[int, float | None] | None = None

    def transport(self) -> Transport[Frame, Frame]:
        return Transport(self.receive, self.send, self.close, self.abort)

    def abort(self) -> None:
        self.aborts += 1

    def push(self, **message: Any) -> None:
        self.incoming.put_nowait(json.dumps(message))

    def vanish(self) -> None:
        self.incoming.put_nowait(None)

    def audio_frames(self) -> list[dict[str, Any]]:
        messages = [json.loads(f) for f in self.sent if isinstance(f, str)]
        return [m for m in messages if m["type"] == "audio"]

    async def receive(self) -> Frame | None:
        self.receive_calls += 1
        if self.stubborn_receive_at is not None and self.receive_calls >= self.stubborn_receive_at:
            self.receiving.set()
            await _ignore_cancels(self.release, self.receive_cancelled)
            return None
        self.receiving.set()
        try:
            return await self.incoming.get()
        finally:
            self.receiving.clear()

    async def send(self, frame: Frame) -> None:
        self.send_calls += 1
        if self.probe is not None and self.at_first_send is None:
            self.at_first_send = self.probe()
        if self.fail_send_at is not None and self.send_calls >= self.fail_send_at:
            await self.fail_now.wait()
            raise self.send_error
        if self.block_send_at is not None and self.send_calls >= self.block_send_at:
            self.send_blocked.set()
            await self.unblock.wait()  # a peer that does not read: this send does not complete
        if self.writes_first:
            self.sent.append(frame)
        await asyncio.sleep(0)  # a real send yields to the loop
        if not self.writes_first:
            self.sent.append(frame)

    async def close(self, close: Close) -> None:
        self.closes.append(close)
        self.closing.set()
        if self.close_mode == "block":
            await asyncio.Event().wait()
        elif self.close_mode == "ignore_cancel":
            await _ignore_cancels(self.release, self.close_cancelled)
        elif self.close_mode == "peer_gone":
            raise PeerGone("the peer reset the connection during the close")


# -- protocols with a twist -----------------------------------------------------------------------


class AnswerOwedProtocol(NativeProtocol):
    """A native protocol whose client still awaits an answer after it stopped sending (as a
    Wyoming client that half-closed after a request): the reader waits, the writer goes on."""

    asked = False

    def peer_gone(self) -> bool:
        self.asked = True
        return False


class FailingProtocol(NativeProtocol):
    """Raises an unexpected exception (a bug) on the frame ``"boom"``."""

    def receive(self, frame: str | bytes) -> None:
        if frame == "boom":
            raise RuntimeError("boom: a bug in the protocol")
        super().receive(frame)


class TimedProtocol(NativeProtocol):
    """An inactivity timeout: when the deadline passes, the session asks for a close."""

    def __init__(self, session: Session, clock: Callable[[], float], after_s: float) -> None:
        super().__init__(session, clock, binary=False)
        self._deadline: float | None = clock() + after_s
        self.expired = 0

    def deadline(self) -> float | None:
        return self._deadline

    def expire(self) -> None:
        self.expired += 1
        self._deadline = None
        self._session.request_close("idle timeout")


# -- the harness ---------------------------------------------------------------------------------


@dataclass
class Connection:
    transport: FakeTransport
    driver: SessionDriver
    protocol: NativeProtocol
    metrics: ServerMetrics
    scheduler: Scheduler
    task: asyncio.Task[None]
    tasks_before: set[asyncio.Task[Any]]

    @property
    def session(self) -> Session:
        return self.driver.session

    async def finished(self, bound_s: float = BOUND_S) -> bool:
        """Whether the runner's task ended within ``bound_s``."""
        done, _ = await asyncio.wait({self.task}, timeout=bound_s)
        return bool(done)

    def leftover_tasks(self) -> set[asyncio.Task[Any]]:
        return asyncio.all_tasks() - self.tasks_before

    def active_contexts(self) -> float | None:
        return self.metrics.registry.get_sample_value("voxflow_active_contexts")

    def assert_work_stopped(self) -> None:
        """The session is closed and nothing of it runs in the scheduler any more."""
        assert self.session.closed
        assert self.session.open_contexts == 0
        assert self.scheduler.stats().active_streams == 0
        assert self.active_contexts() == 0

    def assert_ended_cleanly(self) -> None:
        """The handler returned normally, its work stopped and none of its tasks is left."""
        assert self.task.result() is None
        self.assert_work_stopped()
        assert self.leftover_tasks() == set()


async def _connect(
    scheduler: Scheduler,
    pool: EncoderPool,
    transport: FakeTransport,
    *,
    settings: RunnerSettings | None = None,
    outbox_bytes: int = 1 << 20,
    protocol: Callable[[Session, Callable[[], float]], NativeProtocol] | None = None,
) -> Connection:
    """A driver, a protocol and the runner's task over ``transport`` (on the running loop)."""
    tasks_before = asyncio.all_tasks()
    metrics = ServerMetrics()
    session = Session(SessionConfig(default_voice="joe"), VoiceRegistry().get)
    driver = SessionDriver(
        session, scheduler, metrics, outbox_bytes=outbox_bytes, encoder_pool=pool
    )
    made = (protocol or (lambda s, clock: NativeProtocol(s, clock, binary=False)))(
        session, driver.now
    )
    task = asyncio.create_task(
        run_connection(driver, made, transport.transport(), settings or RunnerSettings()),
        name="test-connection",
    )
    connection = Connection(transport, driver, made, metrics, scheduler, task, tasks_before)
    transport.probe = lambda: (scheduler.stats().active_streams, connection.active_contexts())
    return connection


async def _until(condition: Callable[[], bool], timeout_s: float = STREAM_TIMEOUT_S) -> None:
    """Poll ``condition`` on the loop; fail the test (never hang) when it stays false."""
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.005)


async def _stream(connection: Connection, first_frames: int = 1, text: str = LONG) -> None:
    """Open a context (a long one by default) and wait until ``first_frames`` of its frames went
    out (or a send blocked): the connection is mid-stream, with synthesis under way."""
    transport = connection.transport
    transport.push(type="start", context_id="a", output_format="pcm_16000", seed=1)
    transport.push(type="text", context_id="a", text=text)
    transport.push(type="flush", context_id="a")
    await _until(
        lambda: (
            len(transport.sent) >= first_frames
            or transport.send_blocked.is_set()
            or (
                transport.fail_send_at is not None
                and transport.send_calls >= transport.fail_send_at
            )
        )
    )
    # One stream in the scheduler and one active context in the metrics while it streamed.
    assert transport.at_first_send == (1, 1.0)
    transport.fail_now.set()


def _run(scenario: Coroutine[Any, Any, None]) -> None:
    asyncio.run(scenario)


# -- a peer that vanishes ------------------------------------------------------------------------


@pytest.mark.parametrize("writer", ["idle", "blocked in send"])
def test_a_peer_that_vanishes_mid_stream_ends_the_connection_and_its_work(
    scheduler: Scheduler, encoder_pool: EncoderPool, writer: str
) -> None:
    async def scenario() -> None:
        transport = FakeTransport(block_send_at=3 if writer == "blocked in send" else None)
        connection = await _connect(scheduler, encoder_pool, transport)
        await _stream(connection, first_frames=2)
        assert transport.audio_frames(), "the context is streaming audio"
        if writer == "blocked in send":
            await _until(transport.send_blocked.is_set)
        transport.vanish()
        assert await connection.finished(), "run_connection did not return"
        assert connection.task.result() is None
        connection.assert_work_stopped()
        assert transport.closes == []  # nobody to close: the peer is gone
        assert connection.leftover_tasks() == set()

    _run(scenario())


def test_a_send_that_finds_the_peer_gone_ends_the_connection_without_a_close(
    scheduler: Scheduler, encoder_pool: EncoderPool
) -> None:
    async def scenario() -> None:
        # The third send finds the connection reset (the reader has not noticed yet).
        transport = FakeTransport(fail_send_at=3, send_error=PeerGone("reset"))
        connection = await _connect(scheduler, encoder_pool, transport)
        await _stream(connection)
        assert await connection.finished()
        assert transport.send_calls == 3 and len(transport.sent) == 2
        assert transport.closes == []  # PeerGone: the runner does not try to close
        connection.assert_ended_cleanly()

    _run(scenario())


# -- a peer that stops reading -------------------------------------------------------------------


def test_a_send_that_outlasts_the_write_timeout_closes_with_the_stall_close(
    scheduler: Scheduler, encoder_pool: EncoderPool, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        transport = FakeTransport(block_send_at=2)  # one frame goes out, then nothing is read
        connection = await _connect(
            scheduler, encoder_pool, transport, settings=RunnerSettings(write_timeout_s=0.2)
        )
        await _stream(connection)
        assert await connection.finished(), "a stalled client was not closed"
        assert transport.closes == [STALL_CLOSE]
        assert transport.aborts == 0  # the close went through: nothing to drop
        assert len(transport.sent) == 1
        connection.assert_ended_cleanly()

    with caplog.at_level(logging.WARNING, logger="voxflow"):
        _run(scenario())
    assert "closing a client that stopped reading" in caplog.text


@pytest.mark.parametrize("events", ["audio", "errors"])
def test_a_full_outbox_closes_with_the_stall_close(
    scheduler: Scheduler, encoder_pool: EncoderPool, caplog: pytest.LogCaptureFixture, events: str
) -> None:
    async def scenario() -> None:
        # The first send never completes and the write timeout is far away: only the outbox
        # (200 bytes, stalled at four times that) filling up can tell that the client stopped
        # reading.
        transport = FakeTransport(block_send_at=1)
        connection = await _connect(
            scheduler,
            encoder_pool,
            transport,
            settings=RunnerSettings(write_timeout_s=600.0),
            outbox_bytes=200,
        )
        if events == "audio":
            await _stream(connection)
        else:
            for _ in range(5):  # five bad frames: five error events
                transport.push(type="nonsense")
        assert await connection.finished(STREAM_TIMEOUT_S), "a full outbox was not noticed"
        assert connection.driver.stalled.is_set()
        assert transport.closes == [STALL_CLOSE]
        assert transport.sent == []
        connection.assert_ended_cleanly()

    with caplog.at_level(logging.WARNING, logger="voxflow"):
        _run(scenario())
    assert "client is not reading" in caplog.text
    assert "closing a client that stopped reading" in caplog.text


def test_a_full_outbox_holds_the_rendering_until_the_client_reads_again(
    scheduler: Scheduler, encoder_pool: EncoderPool
) -> None:
    async def scenario() -> None:
        transport = FakeTransport(block_send_at=1)
        connection = await _connect(
            scheduler,
            encoder_pool,
            transport,
            settings=RunnerSettings(write_timeout_s=600.0),
            outbox_bytes=20_000,
        )
        # Seven seconds of speech (220 kB): ten times what the outbox holds, yet quick to
        # render to its end once the client reads again.
        await _stream(connection, text=SENTENCE)
        outbox = connection.driver.outbound
        await _until(lambda: outbox.full)
        # The stream is held: what was in flight lands, then nothing more is rendered.
        await _until(lambda: scheduler.stats().busy_workers == 0)
        jobs = scheduler.stats().jobs_run
        await asyncio.sleep(0.5)
        assert scheduler.stats().jobs_run == jobs
        assert 20_000 < outbox.bytes <= STALL_FACTOR * 20_000
        assert not connection.driver.stalled.is_set()
        # The client reads again: the rest is rendered and sent, to its end.
        transport.unblock.set()
        transport.push(type="end", context_id="a")
        await _until(lambda: any(f for f in transport.sent if '"done"' in str(f)))
        assert scheduler.stats().jobs_run > jobs
        assert not connection.driver.stalled.is_set()
        transport.vanish()
        assert await connection.finished()
        connection.assert_ended_cleanly()

    _run(scenario())


@pytest.mark.parametrize("close_mode", ["block", "peer_gone"])
def test_a_close_that_hangs_or_fails_is_bounded_by_the_teardown(
    scheduler: Scheduler, encoder_pool: EncoderPool, close_mode: CloseMode
) -> None:
    async def scenario() -> None:
        transport = FakeTransport(block_send_at=2, close_mode=close_mode)
        settings = RunnerSettings(write_timeout_s=0.2, teardown_s=0.2)
        connection = await _connect(scheduler, encoder_pool, transport, settings=settings)
        await _stream(connection)
        assert await connection.finished(), "a close that never completes held the handler"
        assert transport.closes == [STALL_CLOSE]
        # A close that hangs (the client never takes the close frame) ends in an abort; one
        # that found the peer gone needs none.
        assert transport.aborts == (1 if close_mode == "block" else 0)
        connection.assert_ended_cleanly()

    _run(scenario())


def test_a_close_that_ignores_its_cancel_still_lets_the_handler_return(
    scheduler: Scheduler, encoder_pool: EncoderPool
) -> None:
    async def scenario() -> None:
        transport = FakeTransport(close_mode="ignore_cancel")
        settings = RunnerSettings(teardown_s=0.2)
        connection = await _connect(scheduler, encoder_pool, transport, settings=settings)
        await _stream(connection)
        connection.session.request_close("bye")  # the writer ends with a close
        try:
            returned = await connection.finished()
        finally:
            transport.release.set()  # never leave the stubborn close behind, pass or fail
            await asyncio.wait({connection.task}, timeout=BOUND_S)
        assert transport.closes == [Close(1000, "bye")]
        assert transport.close_cancelled.is_set()  # the teardown bound did fire
        assert returned, "run_connection awaited a close that ignores cancels past teardown_s"
        connection.assert_work_stopped()
        await _until(lambda: not connection.leftover_tasks(), BOUND_S)  # released: all gone

    _run(scenario())


# -- failures inside the server ------------------------------------------------------------------


def test_a_protocol_that_raises_closes_with_the_failure_close_and_logs_it(
    scheduler: Scheduler, encoder_pool: EncoderPool, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        transport = FakeTransport()
        connection = await _connect(
            scheduler,
            encoder_pool,
            transport,
            protocol=lambda s, clock: FailingProtocol(s, clock, binary=False),
        )
        await _stream(connection)
        transport.incoming.put_nowait("boom")
        assert await connection.finished()
        assert transport.closes == [FAILURE_CLOSE]
        connection.assert_ended_cleanly()

    with caplog.at_level(logging.ERROR, logger="voxflow"):
        _run(scenario())
    failures = [r for r in caplog.records if "voxflow-read failed" in r.getMessage()]
    assert len(failures) == 1
    assert failures[0].levelno == logging.ERROR
    assert failures[0].exc_info is not None and "boom" in str(failures[0].exc_info[1])


def test_a_send_that_raises_unexpectedly_closes_with_the_failure_close(
    scheduler: Scheduler, encoder_pool: EncoderPool, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        transport = FakeTransport(fail_send_at=2, send_error=ValueError("a bug in the adapter"))
        connection = await _connect(scheduler, encoder_pool, transport)
        await _stream(connection)
        assert await connection.finished()
        assert transport.closes == [FAILURE_CLOSE]
        connection.assert_ended_cleanly()

    with caplog.at_level(logging.ERROR, logger="voxflow"):
        _run(scenario())
    assert any(
        "voxflow-write failed" in r.getMessage()
        and r.exc_info is not None
        and isinstance(r.exc_info[1], ValueError)
        for r in caplog.records
    )


def test_the_protocol_timer_expires_and_its_close_ends_the_connection(
    scheduler: Scheduler, encoder_pool: EncoderPool
) -> None:
    async def scenario() -> None:
        transport = FakeTransport()
        connection = await _connect(
            scheduler,
            encoder_pool,
            transport,
            protocol=lambda s, clock: TimedProtocol(s, clock, after_s=0.05),
        )
        assert await connection.finished()
        assert connection.task.result() is None
        assert isinstance(connection.protocol, TimedProtocol)
        assert connection.protocol.expired == 1
        assert transport.closes == [Close(1000, "idle timeout")]
        assert connection.session.closed
        assert connection.leftover_tasks() == set()

    _run(scenario())


# -- a cancel at each await point ----------------------------------------------------------------

CANCEL_POINTS = [
    "receive",  # the reader waits for a frame, mid-stream
    "send",  # the writer is stuck in a send
    "outbox",  # the reader is done (an answer is owed), the writer waits on the outbox
    "close",  # the connection ended and the transport's close hangs
    "teardown",  # a task ignored its cancel and the teardown waits for it
]


@pytest.mark.parametrize("point", CANCEL_POINTS)
def test_a_cancel_at_any_await_point_ends_the_handler_and_its_work(
    scheduler: Scheduler, encoder_pool: EncoderPool, point: str
) -> None:
    async def scenario() -> None:
        # Bounds far longer than the test: only the cancel can end the connection early.
        settings = RunnerSettings(write_timeout_s=600.0, teardown_s=600.0)
        transport = FakeTransport(
            block_send_at=3 if point == "send" else None,
            close_mode="block" if point == "close" else "return",
            # start, text, flush come through; the next receive ignores cancels.
            stubborn_receive_at=4 if point == "teardown" else None,
        )
        connection = await _connect(
            scheduler,
            encoder_pool,
            transport,
            settings=settings,
            protocol=(
                (lambda s, clock: AnswerOwedProtocol(s, clock, binary=False))
                if point == "outbox"
                else None
            ),
        )
        await _stream(connection)
        if point == "receive":
            await _until(transport.receiving.is_set)
        elif point == "send":
            await _until(transport.send_blocked.is_set)
        elif point == "outbox":
            transport.vanish()
            protocol = connection.protocol
            assert isinstance(protocol, AnswerOwedProtocol)
            await _until(lambda: protocol.asked)
        elif point == "close":
            connection.session.request_close("bye")
            await _until(transport.closing.is_set)
        else:
            connection.session.request_close("bye")
            await _until(transport.receive_cancelled.is_set)  # the teardown is waiting
        assert not connection.task.done()

        connection.task.cancel()
        try:
            finished = await connection.finished()
            assert finished, f"a cancel while in {point} did not end the handler"
            assert connection.task.cancelled()  # the cancel propagates; it is not swallowed
            connection.assert_work_stopped()
            if point == "teardown":
                # Documented: a task that ignores its cancel is logged and left behind.
                assert {t.get_name() for t in connection.leftover_tasks()} == {"voxflow-read"}
            else:
                assert connection.leftover_tasks() == set()
        finally:
            transport.release.set()
            await asyncio.sleep(0.05)
        assert connection.leftover_tasks() == set()

    _run(scenario())


async def _blocked_mid_stream(
    scheduler: Scheduler,
    encoder_pool: EncoderPool,
    transport: FakeTransport,
    final_message_s: float,
) -> tuple[StopSignal, Connection]:
    """A connection streaming through ``transport`` (built to block a send) until a send
    blocked, and the stop signal it drains by. Its write timeout is far longer than any test:
    only the final-message bound, or the client reading again, ends that send."""
    stopping = StopSignal()
    settings = RunnerSettings(
        write_timeout_s=600.0, stopping=stopping, final_message_s=final_message_s
    )
    connection = await _connect(scheduler, encoder_pool, transport, settings=settings)
    await _stream(connection)
    await _until(transport.send_blocked.is_set)
    return stopping, connection


def test_the_stop_signal_ends_a_live_stream_with_the_protocols_last_words(
    scheduler: Scheduler, encoder_pool: EncoderPool
) -> None:
    async def scenario() -> None:
        stopping = StopSignal()
        transport = FakeTransport()
        settings = RunnerSettings(stopping=stopping)
        connection = await _connect(scheduler, encoder_pool, transport, settings=settings)
        await _stream(connection)
        # The drain waits on this count before uvicorn closes what is left.
        assert stopping.owed == 1
        stopping.set()
        assert await stopping.said(STREAM_TIMEOUT_S)
        # Owed no more once the last words are out, before the connection's close.
        last = json.loads(transport.sent[-1])
        assert (last["type"], last["code"], last["retryable"]) == ("error", "shutting_down", True)
        assert await connection.finished(), "the stop signal did not end the connection"
        assert transport.closes == [Close(1012, "shutting down")]
        connection.assert_ended_cleanly()

    _run(scenario())


def test_nothing_follows_the_last_words_not_even_audio_waiting_to_be_sent(
    scheduler: Scheduler, encoder_pool: EncoderPool
) -> None:
    async def scenario() -> None:
        # The writer is mid-send (a slow client) when the stop comes: the last words wait
        # for it, and its next audio waits behind the last words.
        transport = FakeTransport(block_send_at=2, writes_first=True)
        stopping, connection = await _blocked_mid_stream(scheduler, encoder_pool, transport, 60.0)
        await _until(lambda: len(connection.driver.outbound) > 0)  # more audio rendered
        stopping.set()
        await asyncio.sleep(0.05)  # the stop waits for its turn to send
        transport.unblock.set()
        assert await stopping.said(STREAM_TIMEOUT_S)
        assert await connection.finished(), "the stop signal did not end the connection"
        last = json.loads(transport.sent[-1])
        assert (last["type"], last["code"]) == ("error", "shutting_down"), transport.sent[-3:]
        assert transport.closes == [Close(1012, "shutting down")]
        connection.assert_ended_cleanly()

    _run(scenario())


def test_a_connection_that_ends_before_the_stop_owes_no_last_words(
    scheduler: Scheduler, encoder_pool: EncoderPool
) -> None:
    async def scenario() -> None:
        stopping = StopSignal()
        transport = FakeTransport()
        connection = await _connect(
            scheduler, encoder_pool, transport, settings=RunnerSettings(stopping=stopping)
        )
        await _stream(connection)
        assert stopping.owed == 1
        transport.vanish()
        assert await connection.finished(), "run_connection did not return"
        assert stopping.owed == 0  # the drain does not wait for it
        connection.assert_work_stopped()

    _run(scenario())


def test_last_words_to_a_client_that_stopped_reading_are_bounded(
    scheduler: Scheduler, encoder_pool: EncoderPool
) -> None:
    async def scenario() -> None:
        transport = FakeTransport(block_send_at=2)
        stopping, connection = await _blocked_mid_stream(scheduler, encoder_pool, transport, 0.2)
        stopping.set()
        # Past the final-message bound the last words are owed no more: the drain goes on.
        assert await stopping.said(STREAM_TIMEOUT_S)
        assert await connection.finished(), "a stuck client held the shutdown"
        assert transport.closes == [STALL_CLOSE]
        connection.assert_ended_cleanly()

    _run(scenario())


def test_last_words_that_time_out_at_shutdown_never_abort_the_connection(
    scheduler: Scheduler, encoder_pool: EncoderPool
) -> None:
    # A client that is only slow when the server stops gets what is buffered for it when the
    # process exits (a FIN after the data); an abort would drop its last words.
    async def scenario() -> None:
        stopping = StopSignal()
        transport = FakeTransport(block_send_at=2, close_mode="block")
        settings = RunnerSettings(
            write_timeout_s=600.0, stopping=stopping, final_message_s=0.2, teardown_s=0.2
        )
        connection = await _connect(scheduler, encoder_pool, transport, settings=settings)
        await _stream(connection)
        await _until(transport.send_blocked.is_set)
        stopping.set()
        assert await connection.finished(), "a stuck close held the shutdown"
        assert transport.aborts == 0
        connection.assert_ended_cleanly()

    _run(scenario())
