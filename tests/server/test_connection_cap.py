"""The connection cap against a real uvicorn server: past it ordinary requests are refused and
health checks still answered, idle keep-alive connections make room first, and a flood of idle
and trickling sockets leaves the server answering and, once it is over, with nothing open."""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import time
from collections.abc import Iterator

import pytest
import uvicorn

from tests.support.raw_http import (
    TIMEOUT_S,
    WS_UPGRADE,
    ask,
    closed_by_server,
    connected,
    connections,
    head,
    read_answer,
    until,
)
from tests.support.servers import free_port, serving
from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow.server.http_protocol import LimitedHttpProtocol

CAP, RESERVE = 8, 4


@pytest.fixture(scope="module")
def server(served_engine: EngineRouter) -> Iterator[uvicorn.Server]:
    # Long timeouts: the sockets a test opens stay open until it closes them.
    settings = ServerSettings(
        port=free_port(),
        workers=1,
        max_connections=CAP,
        health_reserve=RESERVE,
        header_timeout_s=TIMEOUT_S,
        keepalive_timeout_s=TIMEOUT_S,
    )
    with serving(settings, served_engine) as started:
        yield started


def _refused(server: uvicorn.Server) -> int:
    protocol = server.config.http_protocol_class
    assert issubclass(protocol, LimitedHttpProtocol)
    return protocol.gate.refused


@contextlib.contextmanager
def _silent(server: uvicorn.Server, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that send nothing, open (and counted by the server) while in use."""
    with contextlib.ExitStack() as stack:
        before = connections(server)
        socks = [stack.enter_context(connected(server.config.port)) for _ in range(count)]
        until(lambda: connections(server) >= min(before + count, CAP + RESERVE), "not accepted")
        yield socks
    until(lambda: connections(server) == 0, "connections left open")


def test_past_the_cap_only_health_checks_are_served(server: uvicorn.Server) -> None:
    port = server.config.port
    with _silent(server, CAP):
        refused = _refused(server)
        answer = ask(port, "/v1/voices")
        assert answer.status == 503 and answer.headers["retry-after"] == "1"
        assert _refused(server) > refused
        assert ask(port, "/v1/stream", *WS_UPGRADE).status == 503  # a WebSocket handshake too
        for path in ("/healthz", "/readyz", "/metrics"):
            with connected(port) as sock:
                sock.sendall(head("GET", path))
                assert read_answer(sock).status == 200, path
                assert closed_by_server(sock) == b""  # a reserve slot serves one request
    assert ask(port, "/v1/voices").status == 200  # under the cap again


def test_silent_sockets_in_the_reserve_give_way_to_a_health_check(server: uvicorn.Server) -> None:
    port = server.config.port
    with _silent(server, CAP + RESERVE) as socks:
        # Past cap and reserve: the reserve connection that has waited longest is closed for
        # each new one, so the health check gets through.
        assert ask(port, "/healthz").status == 200
        with connected(port) as extra:
            # The first in the reserve was pushed out to make room.
            assert closed_by_server(socks[CAP]) == b""
            extra.sendall(head("GET", "/healthz"))
            assert read_answer(extra).status == 200


def test_an_idle_keep_alive_connection_makes_room_first(server: uvicorn.Server) -> None:
    port = server.config.port
    with connected(port) as idle:
        idle.sendall(head("GET", "/healthz"))
        assert read_answer(idle).status == 200  # kept alive, idle now
        with _silent(server, CAP - 1):
            until(lambda: connections(server) == CAP, "not at the cap")
            assert ask(port, "/v1/voices").status == 200  # served in the idle one's place
            assert closed_by_server(idle) == b""


def _ensure_fd_limit(needed: int) -> int:
    """Raise this process's soft open-file limit towards ``needed``; what it allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def test_a_flood_of_idle_and_trickling_sockets_leaves_health_checks_answered(
    served_engine: EngineRouter,
) -> None:
    # Each socket costs two descriptors here (both ends are in this process).
    idle_count, trickle_count = 500, 1000
    room = (_ensure_fd_limit(2 * (idle_count + trickle_count) + 256) - 256) // 2
    scale = min(1.0, room / (idle_count + trickle_count))
    idle_count, trickle_count = int(idle_count * scale), int(trickle_count * scale)
    settings = ServerSettings(
        port=free_port(),
        workers=1,
        max_connections=100,
        health_reserve=8,
        header_timeout_s=2.0,
        keepalive_timeout_s=1.0,
    )
    trickled = head("GET", "/v1/voices", "x-pad: " + "a" * 4000)  # never whole in time
    with serving(settings, served_engine) as server, selectors.DefaultSelector() as selector:
        port = server.config.port
        open_socks: dict[socket.socket, int] = {}  # socket -> bytes of the head sent (-1: idle)
        try:
            for index in range(idle_count + trickle_count):
                sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
                sock.setblocking(False)
                open_socks[sock] = -1 if index < idle_count else 0
                selector.register(sock, selectors.EVENT_READ)
            health_answers = 0
            deadline = time.monotonic() + 90
            while open_socks:
                assert time.monotonic() < deadline, f"{len(open_socks)} sockets never closed"
                for key, _ in selector.select(timeout=0.1):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    if not _closed(sock):
                        continue
                    selector.unregister(sock)
                    del open_socks[sock]
                    sock.close()
                for sock, sent in open_socks.items():
                    if 0 <= sent < len(trickled):
                        with contextlib.suppress(OSError):  # closed under us: read next round
                            open_socks[sock] = sent + sock.send(trickled[sent : sent + 1])
                assert ask(port, "/healthz").status == 200  # assert it answers, not how fast
                health_answers += 1
        finally:
            for sock in open_socks:
                selector.unregister(sock)
                sock.close()
        # Every flood socket was closed by the server (none by this test), and it answered
        # throughout; with them gone, nothing is left open.
        assert health_answers > 0
        assert server.config.http_protocol_class.gate.refused > 0
        until(lambda: connections(server) == 0, "connections left open after the flood")


def _closed(sock: socket.socket) -> bool:
    """Read what is there (a 408, say); whether the server has closed the connection."""
    while True:
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:
            return False
        except ConnectionResetError:
            return True
        if not chunk:
            return True
