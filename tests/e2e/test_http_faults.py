"""HTTP answers on the connection runner, against a real uvicorn server: a client that stops
reading is closed by the write timeout and its work stops; a failure after the response started
ends the body without its last chunk, so the client sees a failed transfer, not a short file."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable

import httpx
import pytest
import uvicorn

from tests.support.servers import free_port, serving
from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow.server.services import Services

# About five minutes of speech: rendered unpaced it keeps coming for seconds, far more bytes
# (at 44.1 kHz PCM) than the client's and the server's socket buffers hold.
LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget. "
) * 20
SETTLE_S = 60.0  # a bound against a hang, far above what the server needs when busy


def _services(server: uvicorn.Server) -> Services:
    services = server.config.app.state.services
    assert isinstance(services, Services)
    return services


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SETTLE_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_client_that_stops_reading_is_closed_and_its_work_stops(
    caplog: pytest.LogCaptureFixture, served_engine: EngineRouter
) -> None:
    settings = ServerSettings(port=free_port(), workers=2, write_timeout_s=1.0)
    with serving(settings, served_engine) as server:
        services = _services(server)
        body = json.dumps({"text": LONG}).encode()
        head = (
            "POST /v1/text-to-speech/joe/stream?output_format=pcm_44100 HTTP/1.1\r\n"
            f"host: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {len(body)}"
            "\r\n\r\n"
        ).encode()
        with socket.socket() as client:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once
            client.connect(("127.0.0.1", settings.port))
            client.sendall(head + body)
            _until(lambda: services.scheduler.stats().active_streams == 1, "no stream started")
            # The client reads nothing. Its sends block, the write timeout passes, and the
            # server closes the connection and stops the synthesis.
            _until(
                lambda: len(server.server_state.connections) == 0,
                "the server never closed a client that stopped reading",
            )
            _until(
                lambda: services.scheduler.stats().active_streams == 0,
                "the synthesis went on for a closed connection",
            )
            received = _read_to_end(client)
        assert received.startswith(b"HTTP/1.1 200")
        assert b"transfer-encoding: chunked" in received.lower()
        assert not received.endswith(b"0\r\n\r\n"), "a cut body must not end like a whole one"
    assert "closing a client that stopped reading" in caplog.text


def _read_to_end(client: socket.socket) -> bytes:
    client.settimeout(SETTLE_S)
    chunks = []
    while chunk := client.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_failure_after_the_response_started_cuts_the_body(served_engine: EngineRouter) -> None:
    settings = ServerSettings(port=free_port(), workers=2)
    with serving(settings, served_engine) as server:
        services = _services(server)
        url = f"http://127.0.0.1:{settings.port}/v1/audio/speech"
        request = {"input": LONG, "response_format": "pcm"}
        received = 0
        with (
            httpx.Client(timeout=SETTLE_S) as client,
            client.stream("POST", url, json=request) as response,
        ):
            assert response.status_code == 200
            with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
                for chunk in response.iter_bytes():
                    if received == 0:
                        # A real fault: the encoders go away mid-answer, so the next piece
                        # of audio cannot be encoded (encoding_failed after the head).
                        services.encoder_pool.shutdown(wait=False)
                    received += len(chunk)
        assert received > 0
        _until(
            lambda: services.scheduler.stats().active_streams == 0,
            "the failed request's synthesis went on",
        )
