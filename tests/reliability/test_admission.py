"""Admission control against a real server and the real client libraries: past the cap on active
streams every protocol refuses a new stream at once, in its own shape and with a retry hint;
``/readyz`` says the server is full; the streams already admitted are untouched, and the server
admits again as soon as they end."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator

import httpx
import openai
import pytest
import uvicorn
from elevenlabs.client import ElevenLabs
from elevenlabs.core.api_error import ApiError
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.support.servers import free_port, serving
from voxflow.config import ServerSettings
from voxflow.engines.router import EngineRouter

CAP = 2
TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def server(served_engine: EngineRouter) -> Iterator[tuple[uvicorn.Server, str]]:
    settings = ServerSettings(port=free_port(), workers=2, max_streams=CAP, retry_after_s=2.0)
    with serving(settings, served_engine) as running:
        yield running, f"127.0.0.1:{settings.port}"


def _recv(ws: ClientConnection) -> dict[str, object]:
    frame = ws.recv(timeout=TIMEOUT_S)
    assert isinstance(frame, str)
    message = json.loads(frame)
    assert isinstance(message, dict)
    return message


@contextlib.contextmanager
def _filled(address: str) -> Iterator[ClientConnection]:
    """A native connection holding every slot: CAP open contexts that have said nothing yet."""
    with connect(f"ws://{address}/v1/stream") as ws:
        for n in range(CAP):
            ws.send(json.dumps({"type": "start", "context_id": f"held-{n}"}))
        deadline = time.monotonic() + TIMEOUT_S
        while _ready(address)[0] != 503:  # a start has no answer: wait until it took its slot
            assert time.monotonic() < deadline, "the held contexts never filled the server"
            time.sleep(0.02)
        yield ws


def _ready(address: str, query: str = "") -> tuple[int, dict[str, object]]:
    with httpx.Client(timeout=TIMEOUT_S) as http:
        response = http.get(f"http://{address}/readyz{query}")
        return response.status_code, response.json()


def test_past_the_cap_every_protocol_refuses_at_once_and_recovers(
    server: tuple[uvicorn.Server, str],
) -> None:
    _, address = server
    with _filled(address) as holder:
        status, body = _ready(address)
        assert (status, body["status"], body["active_streams"]) == (503, "saturated", CAP)
        # Kubernetes' probe: a full pod stays in its Service, to answer new calls with 429.
        status, body = _ready(address, "?saturated=ok")
        assert (status, body["status"]) == (200, "saturated")

        # Native: an error with the hint; the connection stays usable.
        with connect(f"ws://{address}/v1/stream") as ws:
            ws.send(json.dumps({"type": "start", "context_id": "c"}))
            refused = _recv(ws)
            assert (refused["type"], refused["code"]) == ("error", "concurrency_limited")
            assert refused["retryable"] is True and refused["retry_after_ms"] == 2000

        # OpenAI: 429 with Retry-After; the SDK raises its RateLimitError.
        with httpx.Client(timeout=TIMEOUT_S) as http:
            response = http.post(
                f"http://{address}/v1/audio/speech", json={"input": "Hello.", "voice": "alloy"}
            )
            assert response.status_code == 429 and response.headers["retry-after"] == "2"
            error = response.json()["error"]
            assert (error["code"], error["type"]) == ("concurrency_limited", "rate_limit_error")
            with (
                openai.OpenAI(
                    base_url=f"http://{address}/v1",
                    api_key="unused",
                    max_retries=0,
                    http_client=http,
                ) as client,
                pytest.raises(openai.RateLimitError),
            ):
                client.audio.speech.create(model="tts-1", voice="alloy", input="Hello.")

        # ElevenLabs over HTTP: 429 in its shape, through its SDK.
        with httpx.Client(timeout=TIMEOUT_S) as http:
            eleven = ElevenLabs(base_url=f"http://{address}", api_key="unused", httpx_client=http)
            with pytest.raises(ApiError) as raised:
                audio = eleven.text_to_speech.convert(
                    "joe", text="Hello.", request_options={"max_retries": 0}
                )
                b"".join(audio)
            assert raised.value.status_code == 429
            assert raised.value.body["detail"]["status"] == "too_many_concurrent_requests"

        # ElevenLabs over its WebSocket: its error frame, then close 1013 (try again later).
        url = f"ws://{address}/v1/text-to-speech/joe/stream-input"
        with connect(url) as ws:
            ws.send(json.dumps({"text": " "}))
            refused = _recv(ws)
            assert refused["error"] == "too_many_concurrent_requests"
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=TIMEOUT_S)
            assert ws.close_code == 1013

        # The admitted streams were not touched: one of them speaks now.
        holder.send(json.dumps({"type": "text", "context_id": "held-0", "text": "Still here."}))
        holder.send(json.dumps({"type": "end", "context_id": "held-0"}))
        while (message := _recv(holder))["type"] != "done":
            assert message["type"] in ("audio", "timestamps")
        assert message["context_id"] == "held-0"

    # The holder left: its slots are free again, and the server admits.
    with httpx.Client(timeout=TIMEOUT_S) as http:
        response = http.post(f"http://{address}/v1/audio/speech", json={"input": "Hello."})
        assert response.status_code == 200 and response.content
        status, body = _ready(address)
        assert (status, body["status"]) == (200, "ready")
        metrics = http.get(f"http://{address}/metrics").text
    assert 'voxflow_rejected_total{reason="saturated"} 5.0' in metrics
