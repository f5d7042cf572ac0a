"""Request limits against a real uvicorn server, over raw sockets: slow heads and bodies are
closed, oversize heads and bodies refused before they are read (the connection cap:
``test_connection_cap``)."""

from __future__ import annotations

import json
import select
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from fastapi.routing import APIRoute
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from tests.support.raw_http import (
    TIMEOUT_S,
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

MAX_BODY = 64 << 10
SETTINGS = {
    "header_timeout_s": 1.0,
    "body_timeout_s": 1.0,
    "keepalive_timeout_s": 1.0,
    "max_body_bytes": MAX_BODY,
    "max_header_bytes": 8 << 10,
}


@pytest.fixture(scope="module")
def server(served_engine: EngineRouter) -> Iterator[uvicorn.Server]:
    settings = ServerSettings(port=free_port(), workers=1, **SETTINGS)  # type: ignore[arg-type]
    with serving(settings, served_engine) as started:
        yield started


def _port(server: uvicorn.Server) -> int:
    return server.config.port


def test_a_silent_connection_is_closed_without_an_answer(server: uvicorn.Server) -> None:
    with connected(_port(server)) as sock:
        assert closed_by_server(sock) == b""


def test_a_trickled_request_head_gets_408_then_the_connection_closes(
    server: uvicorn.Server,
) -> None:
    # Far more head than fits in the timeout at a byte per 50 ms: only the deadline ends it.
    whole = head("GET", "/healthz", "x-pad: " + "a" * 2000)
    sent = 0
    with connected(_port(server)) as sock:
        deadline = time.monotonic() + TIMEOUT_S
        while not select.select([sock], [], [], 0.05)[0]:
            assert time.monotonic() < deadline and sent < len(whole), "the head was never cut"
            sock.send(whole[sent : sent + 1])
            sent += 1
        answer = read_answer(sock)
        assert answer.status == 408 and answer.headers["connection"] == "close"
        assert "head" in json.loads(answer.body)["detail"]
        assert closed_by_server(sock) == b""
    assert sent < len(whole)


def test_empty_lines_do_not_keep_an_idle_connection_open(server: uvicorn.Server) -> None:
    # The parser skips empty lines between requests without starting one, so they would reset
    # uvicorn's keep-alive timer forever; the head deadline still runs.
    with connected(_port(server)) as sock:
        sock.sendall(head("GET", "/healthz"))
        assert read_answer(sock).status == 200
        deadline = time.monotonic() + TIMEOUT_S
        while not select.select([sock], [], [], 0.1)[0]:
            assert time.monotonic() < deadline, "never closed"
            sock.send(b"\r\n")
        assert closed_by_server(sock) == b""  # no request began: no answer, just the close


def test_an_idle_keep_alive_connection_is_closed(server: uvicorn.Server) -> None:
    with connected(_port(server)) as sock:
        for _ in range(2):  # kept alive between requests
            sock.sendall(head("GET", "/healthz"))
            assert read_answer(sock).status == 200
        assert closed_by_server(sock) == b""


def test_a_body_that_does_not_arrive_in_time_gets_408(server: uvicorn.Server) -> None:
    with connected(_port(server)) as sock:
        sock.sendall(
            head(
                "POST", "/v1/audio/speech", "content-type: application/json", "content-length: 200"
            )
            + b'{"input": "Hel'
        )
        answer = read_answer(sock)
        assert answer.status == 408 and "body" in json.loads(answer.body)["detail"]
        assert closed_by_server(sock) == b""


def _post_paths(server: uvicorn.Server) -> list[str]:
    routes = server.config.app.routes
    paths = [r.path for r in routes if isinstance(r, APIRoute) and "POST" in r.methods]
    return [path.replace("{voice_id}", "joe") for path in paths]


def test_every_post_route_refuses_an_announced_oversize_body_before_reading_it(
    server: uvicorn.Server,
) -> None:
    paths = _post_paths(server)
    assert "/v1/audio/speech" in paths and len(paths) >= 5
    for path in paths:
        with connected(_port(server)) as sock:
            # 100 MB announced, not a byte of it sent: the answer cannot have waited for it (and
            # is not the body timeout's 408).
            sock.sendall(head("POST", path, "content-length: 100000000"))
            answer = read_answer(sock)
            assert answer.status == 413, path
            assert str(MAX_BODY) in json.loads(answer.body)["detail"]
            assert closed_by_server(sock) == b""


def _rejected(server: uvicorn.Server, reason: str) -> float:
    with connected(_port(server)) as sock:
        sock.sendall(head("GET", "/metrics"))
        text = read_answer(sock).body.decode()
    prefix = f'voxflow_rejected_total{{reason="{reason}"}} '
    return sum(float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix))


def test_refusals_are_counted_by_reason(server: uvicorn.Server) -> None:
    before = _rejected(server, "body_size")
    with connected(_port(server)) as sock:
        sock.sendall(head("POST", "/v1/audio/speech", "content-length: 100000000"))
        assert read_answer(sock).status == 413
    assert _rejected(server, "body_size") == before + 1


def test_a_chunked_body_is_refused_once_it_passes_the_limit(server: uvicorn.Server) -> None:
    piece = b"a" * 16384
    chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
    sent = 0
    with connected(_port(server)) as sock:
        sock.sendall(head("POST", "/v1/audio/speech", "transfer-encoding: chunked"))
        sock.setblocking(False)
        while not select.select([sock], [], [], 0)[0]:
            assert sent < 64 << 20, "64 MiB sent and no answer"
            if select.select([], [sock], [], 0.05)[1]:
                sent += sock.send(chunk)
        sock.settimeout(TIMEOUT_S)
        answer = read_answer(sock)
        assert answer.status == 413
        assert closed_by_server(sock) == b""
    assert sent > MAX_BODY  # the limit was passed before the answer, not at the head


def test_a_client_that_sends_its_whole_oversize_body_still_reads_the_413(
    server: uvicorn.Server,
) -> None:
    # httpx writes every byte before it reads: the server drains what follows its answer
    # rather than reset the connection under it.
    url = f"http://127.0.0.1:{_port(server)}/v1/audio/speech"
    with httpx.Client(timeout=TIMEOUT_S) as client:
        response = client.post(url, content=b"x" * (4 * MAX_BODY))
    assert response.status_code == 413


def test_a_chunked_body_within_the_limit_is_served(server: uvicorn.Server) -> None:
    body = json.dumps({"model": "tts-1", "input": "Hi.", "voice": "joe"}).encode()

    def chunks() -> Iterator[bytes]:
        yield body[:10]  # a generator body goes out chunked
        yield body[10:]

    url = f"http://127.0.0.1:{_port(server)}/v1/audio/speech"
    with httpx.Client(timeout=TIMEOUT_S) as client:
        response = client.post(url, content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 200 and len(response.content) > 1000


def test_a_request_head_over_the_limit_gets_431(server: uvicorn.Server) -> None:
    with connected(_port(server)) as sock:
        sock.sendall(head("GET", "/healthz", "x-big: " + "a" * (16 << 10)))
        assert read_answer(sock).status == 431
        assert closed_by_server(sock) == b""


def test_a_websocket_message_over_the_limit_closes_with_1009(server: uvicorn.Server) -> None:
    limit = ServerSettings().ws_max_message_bytes
    url = f"ws://127.0.0.1:{_port(server)}/v1/stream"
    with ws_connect(url, open_timeout=TIMEOUT_S, close_timeout=TIMEOUT_S) as ws:
        ws.send(json.dumps({"type": "text", "text": "a" * limit}))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=TIMEOUT_S)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


def test_refused_connections_are_all_gone(server: uvicorn.Server) -> None:
    # Last in this module: every refusal above let go of its connection.
    assert ask(_port(server), "/healthz").status == 200
    until(lambda: connections(server) == 0, "connections left open")
