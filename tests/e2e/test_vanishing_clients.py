"""1,000 clients that vanish mid-stream leave nothing behind: after they are gone, the server's
open contexts and scheduler streams, the tasks on its event loop, its connections and Python
threads are back to their baseline, and the process has no more OS threads or file descriptors
than before.

A real uvicorn server runs the app in a thread of this process, as in production; the clients
run on their own event loop in the test's thread. Each client opens ``WS /v1/stream``, starts a
context with text long enough to stream for a while, waits until the server is working on it
(its first audio, or an answer proving the context started), then vanishes: the TCP connection
is reset (``SO_LINGER`` 0, then an abort), with no WebSocket close handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import uvicorn
from websockets.asyncio.client import ClientConnection, connect

from tests.support.servers import serving
from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow.server.services import Services

CLIENTS = 1000
BATCH = 50  # clients connected at once
LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget. "
) * 4
CLIENT_TIMEOUT_S = 60.0  # one client's wait for its first answer, with 49 others beside it
SETTLE_S = 30.0  # how long the server may take to tear the last connections down


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    url: str
    server: uvicorn.Server
    services: Services
    loop: asyncio.AbstractEventLoop

    def on_loop(self, what: Any) -> Any:
        """Run coroutine ``what`` on the server's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(what, self.loop).result(timeout=30)


@contextlib.contextmanager
def _serve(settings: ServerSettings, engine: EngineRouter) -> Iterator[Server]:
    """The app under uvicorn in a thread (``tests/conftest.serving``), with handles on the
    uvicorn server, its event loop and the app's services."""
    with serving(settings, engine, join_s=30.0) as server:
        # The listening socket knows the loop it serves on: no hook in the app is needed.
        loop = server.servers[0].get_loop()
        services = server.config.app.state.services
        assert isinstance(services, Services)
        yield Server(f"ws://127.0.0.1:{settings.port}/v1/stream", server, services, loop)


# -- the clients -----------------------------------------------------------------------------------

_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST, no FIN, no handshake


def _vanish(ws: ClientConnection) -> None:
    sock = ws.transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
    ws.transport.abort()


async def _recv_until(ws: ClientConnection, kind: str) -> None:
    async with asyncio.timeout(CLIENT_TIMEOUT_S):
        while True:
            message = await ws.recv()
            if isinstance(message, str) and json.loads(message)["type"] == kind:
                return


async def _client(url: str, index: int) -> str:
    """One client that vanishes; returns the point at which it did."""
    ws = await connect(
        url,
        ping_interval=None,
        compression=None,
        proxy=None,
        max_size=None,
        open_timeout=CLIENT_TIMEOUT_S,
    )
    try:
        await ws.send(
            json.dumps({"type": "start", "context_id": "a", "output_format": "pcm_16000"})
        )
        await ws.send(json.dumps({"type": "text", "context_id": "a", "text": LONG}))
        await ws.send(json.dumps({"type": "flush", "context_id": "a"}))
        if index % 3 == 0:
            await _recv_until(ws, "audio")  # mid-stream: audio is flowing
            return "audio"
        if index % 3 == 1:
            # The answer to a flush of an unknown context comes after the context started (the
            # server handles frames in order): its synthesis is under way.
            await ws.send(json.dumps({"type": "flush", "context_id": "nope"}))
            await _recv_until(ws, "error")
            return "started"
        return "sent"  # gone right after sending, maybe before the server read a frame
    finally:
        _vanish(ws)
        async with asyncio.timeout(CLIENT_TIMEOUT_S):
            await ws.wait_closed()


async def _vanishing_clients(url: str, count: int) -> Counter[str]:
    points: Counter[str] = Counter()
    for first in range(0, count, BATCH):
        batch = [_client(url, i) for i in range(first, min(first + BATCH, count))]
        points.update(await asyncio.gather(*batch))
    return points


# -- what must come back to its baseline ----------------------------------------------------------


async def _loop_tasks() -> list[str]:
    """The tasks on the server's loop (this one included), by coroutine name."""
    return sorted(getattr(t.get_coro(), "__qualname__", t.get_name()) for t in asyncio.all_tasks())


def _snapshot(server: Server) -> dict[str, Any]:
    return {
        "active contexts (metric)": server.services.metrics.registry.get_sample_value(
            "voxflow_active_contexts"
        ),
        "scheduler streams": server.services.scheduler.stats().active_streams,
        "uvicorn connections": len(server.server.server_state.connections),
        "server loop tasks": len(server.on_loop(_loop_tasks())),
        "python threads": threading.active_count(),
        "os threads": len(os.listdir("/proc/self/task")),
        "file descriptors": len(os.listdir("/proc/self/fd")),
    }


# Counts of the whole process: objects left by earlier tests in this process (an engine's
# onnxruntime threads, a file) may be collected during the run, so these may fall, never rise.
PROCESS_WIDE = ("os threads", "file descriptors")


def _back(now: dict[str, Any], baseline: dict[str, Any]) -> bool:
    return all(
        now[key] <= value if key in PROCESS_WIDE else now[key] == value
        for key, value in baseline.items()
    )


def _settled(server: Server, baseline: dict[str, Any]) -> dict[str, Any]:
    """Poll until every count is back to ``baseline`` (or the deadline); the last snapshot."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        now = _snapshot(server)
        if _back(now, baseline) or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


def _quiet(server: Server) -> dict[str, Any]:
    """The snapshot once the server is idle (no context, stream or connection) and two
    snapshots half a second apart agree."""
    deadline = time.monotonic() + SETTLE_S
    previous = None
    while True:
        now = _snapshot(server)
        idle = now["active contexts (metric)"] == 0 and now["scheduler streams"] == 0
        if idle and now["uvicorn connections"] == 0 and now == previous:
            return now
        assert time.monotonic() < deadline, f"the server did not go idle: {now}"
        previous = now
        time.sleep(0.5)


def test_a_thousand_clients_that_vanish_mid_stream_leave_nothing_behind(
    served_engine: EngineRouter,
) -> None:
    # Admission is not under test here: every client of a batch must get its stream.
    settings = ServerSettings(port=_free_port(), workers=2, max_streams=2 * BATCH, max_load=0)
    with _serve(settings, served_engine) as server:
        # Warm-up: one batch, so that what the server starts lazily (the first connection's
        # imports, the encoder's first use, the loop's internals) is in the baseline.
        warm = asyncio.run(_vanishing_clients(server.url, BATCH))
        assert sum(warm.values()) == BATCH
        baseline = _quiet(server)
        baseline_tasks = Counter(server.on_loop(_loop_tasks()))
        print(f"\nbaseline: {baseline}")

        began = time.monotonic()
        points = asyncio.run(_vanishing_clients(server.url, CLIENTS))
        took = time.monotonic() - began
        print(f"\n{CLIENTS} vanishing clients in {took:.1f} s ({dict(points)})")
        assert sum(points.values()) == CLIENTS
        assert points["audio"] > 300 and points["started"] > 300

        after = _settled(server, baseline)
        extra_tasks = Counter(server.on_loop(_loop_tasks())) - baseline_tasks
        assert _back(after, baseline), (
            f"not back to the baseline: {after}; extra loop tasks: {extra_tasks}"
        )
