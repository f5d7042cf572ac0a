"""server.pacing: a burst of new sessions starts one per loop turn; health checks never wait, and
neither does a start the server will refuse."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import selectors
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvicorn
import uvloop
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from websockets.sync.client import connect

from tests.support.raw_http import WS_UPGRADE, ask, connected, connections, head, until
from tests.support.servers import free_port, serving
from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow.server.pacing import StartPacer, Turns

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,  # what uvicorn runs the server on
}


@pytest.fixture(params=sorted(LOOPS))
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, None]], None]:
    def run_on_loop(coroutine: Coroutine[Any, Any, None]) -> None:
        with asyncio.Runner(loop_factory=LOOPS[request.param]) as runner:
            runner.run(coroutine)

    return run_on_loop


class Iterations:
    """Counts the loop's iterations: a callback that schedules itself runs once in each."""

    def __init__(self) -> None:
        self.count = 0
        self._handle = asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        self._handle = asyncio.get_running_loop().call_soon(self._tick)

    def stop(self) -> None:
        self._handle.cancel()


def test_a_burst_starts_one_per_iteration_in_arrival_order(run: Callable[..., None]) -> None:
    started: list[tuple[int, int]] = []

    async def burst() -> None:
        turns, iterations = Turns(), Iterations()

        async def session(index: int) -> None:
            await turns.take()
            started.append((index, iterations.count))

        await asyncio.gather(*(session(i) for i in range(20)))
        iterations.stop()
        assert turns.waiting == 0

    run(burst())
    assert [index for index, _ in started] == list(range(20))
    at = [iteration for _, iteration in started]
    assert all(later > earlier for earlier, later in itertools.pairwise(at)), at


def test_a_lone_caller_goes_at_once_and_the_next_one_on_the_next_iteration(
    run: Callable[..., None],
) -> None:
    async def two() -> None:
        turns, iterations = Turns(), Iterations()
        before = iterations.count
        await turns.take()
        assert iterations.count == before  # no one waiting: no wait
        await turns.take()
        assert iterations.count > before  # a turn was given in this iteration already
        await asyncio.sleep(0.01)
        quiet = iterations.count
        await turns.take()
        assert iterations.count == quiet  # the turns went on: nothing left to wait for

    run(two())


def test_a_waiter_cancelled_before_its_turn_is_skipped(run: Callable[..., None]) -> None:
    started: list[int] = []

    async def with_a_cancel() -> None:
        turns = Turns()

        async def session(index: int) -> None:
            await turns.take()
            started.append(index)

        tasks = [asyncio.create_task(session(i)) for i in range(6)]
        await asyncio.sleep(0)  # every task has asked: the first went at once, five wait
        assert turns.waiting == 5
        tasks[2].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[2], asyncio.CancelledError)
        assert turns.waiting == 0

    run(with_a_cancel())
    assert started == [0, 1, 3, 4, 5]


def test_health_paths_and_lifespan_skip_the_line_and_the_rest_waits(
    run: Callable[..., None],
) -> None:
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope.get("path", scope["type"]))

    async def mixed() -> None:
        pacer = StartPacer(app)
        scopes: list[Scope] = [{"type": "websocket", "path": f"/ws{i}"} for i in range(5)]
        scopes += [
            {"type": "http", "path": "/v1/voices"},
            {"type": "http", "path": "/healthz"},
            {"type": "http", "path": "/readyz"},
            {"type": "http", "path": "/metrics"},
            {"type": "lifespan"},
        ]

        async def nothing() -> dict[str, Any]:
            return {}

        async def drop(message: Any) -> None:
            return None

        await asyncio.gather(*(pacer(scope, nothing, drop) for scope in scopes))

    run(mixed())
    # The first WebSocket went at once; the health paths and the lifespan did not wait for the
    # four behind it; the HTTP request took its place in the line, after them.
    assert seen[:5] == ["/ws0", "/healthz", "/readyz", "/metrics", "lifespan"]
    assert seen[5:] == ["/ws1", "/ws2", "/ws3", "/ws4", "/v1/voices"]


def test_a_start_the_server_will_refuse_skips_the_line(run: Callable[..., None]) -> None:
    seen: list[str] = []
    full = False

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["path"])

    async def nothing() -> dict[str, Any]:
        return {}

    async def drop(message: Any) -> None:
        return None

    async def flood() -> None:
        nonlocal full
        pacer = StartPacer(app, refusing=lambda: full)
        line = [
            asyncio.create_task(pacer({"type": "websocket", "path": f"/ws{i}"}, nothing, drop))
            for i in range(5)
        ]
        await asyncio.sleep(0)  # the first went at once; four wait for their turns
        full = True  # the server admits nothing more: what starts now is refused
        await pacer({"type": "http", "path": "/v1/audio/speech"}, nothing, drop)
        await pacer({"type": "websocket", "path": "/v1/stream"}, nothing, drop)
        assert pacer.turns.waiting == 4  # they took no turn: the line still waits as it was
        await asyncio.gather(*line)

    run(flood())
    assert seen == ["/ws0", "/v1/audio/speech", "/v1/stream", "/ws1", "/ws2", "/ws3", "/ws4"]


# -- through the real server -----------------------------------------------------------------------

BURST = 40


def test_a_health_check_is_answered_in_the_middle_of_a_burst_of_handshakes(
    live_server: uvicorn.Server,
) -> None:
    """Handshakes and a probe that reach the server together, on connections it has accepted:
    without pacing the loop starts every handshake in one turn and the probe's answer comes
    after all of them; with it, the probe is answered between two of them."""
    loop = live_server.servers[0].get_loop()
    already = connections(live_server)
    with contextlib.ExitStack() as stack:
        sel = stack.enter_context(selectors.DefaultSelector())
        socks = [stack.enter_context(connected(live_server.config.port)) for _ in range(BURST + 1)]
        *sessions, probe = socks
        # uvloop accepts one connection per loop turn: wait until all are in, so that what is
        # sent next arrives at once, rather than at the pace of the accepts.
        until(
            lambda: connections(live_server) >= already + len(socks),
            "the server did not accept the connections",
        )
        # The server's loop sleeps while everything is sent: it all becomes ready together.
        asleep = threading.Event()
        loop.call_soon_threadsafe(lambda: (asleep.set(), time.sleep(0.3)))
        assert asleep.wait(30)
        for sock in sessions:
            sock.sendall(head("GET", "/v1/stream", *WS_UPGRADE))
        probe.sendall(head("GET", "/healthz", "connection: close"))
        for sock in socks:
            sel.register(sock, selectors.EVENT_READ)
        order: list[socket.socket] = []
        while len(order) < len(socks):
            events = sel.select(timeout=30)
            assert events, f"no answer after {len(order)} of {len(socks)}"
            for key, _ in events:
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                answer = sock.recv(4096)
                expected = b"HTTP/1.1 200" if sock is probe else b"HTTP/1.1 101"
                assert answer.startswith(expected), answer
                order.append(sock)
                sel.unregister(sock)
    handshakes_before_the_probe = order.index(probe)
    assert handshakes_before_the_probe < BURST // 2, handshakes_before_the_probe


class _StartStamps:
    """Wraps the server's app: the loop iteration in which each response to a request or a
    handshake started, by status (``iterations``: set on the server's loop)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.iterations: Iterations | None = None
        self.started: list[tuple[int, int]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def stamped(message: Message) -> None:
            kind = message["type"]
            if self.iterations is not None and kind in (
                "http.response.start",
                "websocket.http.response.start",
            ):
                self.started.append((message["status"], self.iterations.count))
            await send(message)

        await self.app(scope, receive, stamped)


REFUSALS = 40


def test_a_full_server_refuses_a_burst_without_a_turn_each(served_engine: EngineRouter) -> None:
    """Requests and handshakes past a full server reach it together, on connections it has
    accepted: their refusals (429) go out within a few turns of the loop, not one a turn (in the
    line, each waited for the turns of those before it, and every turn for the admitted streams'
    audio: the flood's p95 was 290 ms with 17 calls speaking, docs/benchmarks.md)."""
    settings = ServerSettings(port=free_port(), workers=1, max_streams=1, max_load=0.0)
    with serving(settings, served_engine) as server:
        stamps = _StartStamps(server.config.loaded_app)
        server.config.loaded_app = stamps  # the connections made from now on
        port = settings.port
        body = b'{"input": "Hello there.", "voice": "alloy"}'
        speech = head(
            "POST", "/v1/audio/speech", "content-type: application/json",
            f"content-length: {len(body)}",
        ) + body  # fmt: skip
        speak = head("GET", "/v1/speak?model=aura-2-thalia-en", *WS_UPGRADE)
        with connect(f"ws://127.0.0.1:{port}/v1/stream") as holder:
            holder.send('{"type": "start", "context_id": "held"}')  # the only stream
            until(lambda: ask(port, "/readyz").status == 503, "the held stream never filled it")
            loop = server.servers[0].get_loop()
            until(lambda: connections(server) == 1, "the probes' connections did not close")
            with contextlib.ExitStack() as stack:
                socks = [stack.enter_context(connected(port)) for _ in range(REFUSALS)]
                until(
                    lambda: connections(server) == 1 + REFUSALS,
                    "the server did not accept the connections",
                )
                # The loop waits while everything is sent: it all becomes ready together.
                held, sent = threading.Event(), threading.Event()

                def hold() -> None:
                    stamps.iterations = Iterations()
                    held.set()
                    sent.wait(30)

                loop.call_soon_threadsafe(hold)
                assert held.wait(30)
                for n, sock in enumerate(socks):
                    sock.sendall(speech if n % 2 else speak)
                sent.set()
                for sock in socks:
                    answer = sock.recv(4096)
                    assert answer.startswith(b"HTTP/1.1 429"), answer
        iterations = stamps.iterations
        assert iterations is not None
        loop.call_soon_threadsafe(iterations.stop)
    turns = [at for status, at in stamps.started if status == 429]
    assert len(turns) == REFUSALS
    # One a turn (the line) spans REFUSALS - 1 turns at least.
    assert max(turns) - min(turns) < REFUSALS // 4, sorted(turns)
