"""Slow readers on the WebSocket protocols, against a real server: a native or ElevenLabs client
that asks for a long answer and never reads a byte of it (a socket with a tiny receive buffer)
is given up on after the write timeout: its streams end, its admission slot is free again, and
the server drops its connection (the close frame it cannot be sent is given up on too).
(HTTP's slow reader: tests/e2e/test_http_faults.py.)

Outcomes only: every wait below is a bound against a hang, not a measurement.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
import uvicorn

from tests.support.raw_http import WS_UPGRADE, client_text_frame, head
from tests.support.servers import free_port, serving
from tests.support.traffic import SLOW_TEXT
from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow.server.services import Services

SETTLE_S = 60.0
# The runner gives a close 2 s before it aborts the connection (connection/runner.py).
CLOSE_BOUND_S = 10.0
PROTOCOLS = {
    # The answers are rendered far ahead of playback (max_lead_s below), so the 44.1 kHz audio
    # fills every buffer between server and client within a second or two.
    "native": (
        "/v1/stream",
        [
            {"type": "start", "context_id": "slow", "output_format": "pcm_44100"},
            {"type": "text", "context_id": "slow", "text": SLOW_TEXT},
            {"type": "end", "context_id": "slow"},
        ],
    ),
    # Its inactivity timer at its longest, so only the write timeout can end the connection.
    "elevenlabs": (
        "/v1/text-to-speech/joe/stream-input?output_format=pcm_44100&inactivity_timeout=180",
        [{"text": " "}, {"text": SLOW_TEXT}, {"text": ""}],
    ),
}


def _until(condition: Callable[[], bool], what: str, bound_s: float = SETTLE_S) -> None:
    deadline = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@contextmanager
def _slow_reader(protocol: str, engine: EngineRouter) -> Iterator[tuple[uvicorn.Server, Services]]:
    """A server with a 1 s write timeout, and a client of ``protocol`` that asked for five
    minutes of speech and reads nothing after the handshake; yields once its stream started."""
    # No keep-alive ping: on a busy machine its timeout could end the connection first.
    settings = ServerSettings(
        port=free_port(),
        workers=2,
        write_timeout_s=1.0,
        max_lead_s=600.0,
        ws_ping_interval_s=600.0,
    )
    path, frames = PROTOCOLS[protocol]
    with serving(settings, engine) as server, socket.socket() as client:
        services = server.config.app.state.services
        assert isinstance(services, Services)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once
        client.settimeout(SETTLE_S)
        client.connect(("127.0.0.1", settings.port))
        client.sendall(head("GET", path, *WS_UPGRADE))
        answer = b""
        while b"\r\n\r\n" not in answer:  # the 101, byte by byte: nothing after it is read
            answer += client.recv(1)
        assert answer.startswith(b"HTTP/1.1 101")
        client.sendall(b"".join(client_text_frame(json.dumps(frame)) for frame in frames))
        _until(lambda: services.scheduler.stats().active_streams == 1, "no stream started")
        yield server, services


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_a_websocket_client_that_stops_reading_loses_its_streams_and_its_connection(
    protocol: str, caplog: pytest.LogCaptureFixture, served_engine: EngineRouter
) -> None:
    # One client for both outcomes: each takes a server start and a full buffer to reach.
    with _slow_reader(protocol, served_engine) as (server, services):
        # The client still holds its socket; the server gives up on it all the same.
        _until(
            lambda: services.scheduler.stats().active_streams == 0,
            "the synthesis went on for a client that stopped reading",
        )
        _until(lambda: services.admission.active == 0, "the stream kept its admission slot")
        contexts = services.metrics.registry.get_sample_value("voxflow_active_contexts")
        assert contexts == 0
        _until(
            lambda: len(server.server_state.connections) == 0,
            "the server never closed the connection of a client that stopped reading",
            CLOSE_BOUND_S,
        )
    assert "closing a client that stopped reading" in caplog.text
