"""Whole-text HTTP requests are not paced like live streams: they render as fast as the workers
allow, so a long text's wall time is a small fraction of its audio, with the real client SDKs.
A request refused at once (a full server) is answered without the connection runner."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import httpx
import openai
import pytest
from elevenlabs.client import ElevenLabs
from websockets.sync.client import connect

from voxflow.transports import http_response

TEXT = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget. "
) * 3

ServerFactory = Callable[..., AbstractContextManager[str]]


def test_http_requests_render_faster_than_playback_past_the_lead_cap(
    server_factory: ServerFactory,
) -> None:
    # A live stream on this server is held within 0.5 s of its listener: paced, this text's
    # ~27 s of audio would take ~26 s to arrive.
    with server_factory(max_lead_s=0.5, workers=2) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        with client:
            client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.")  # warm up
            started = time.monotonic()
            with client.audio.speech.with_streaming_response.create(
                model="tts-1", voice="alloy", input=TEXT, response_format="pcm"
            ) as response:
                data = response.read()
            openai_wall = time.monotonic() - started
        openai_audio = len(data) / 2 / 24000
        with httpx.Client(timeout=120) as http:
            eleven = ElevenLabs(base_url=url, api_key="unused", httpx_client=http)
            started = time.monotonic()
            data = b"".join(
                eleven.text_to_speech.stream(voice_id="joe", text=TEXT, output_format="pcm_24000")
            )
            eleven_wall = time.monotonic() - started
        eleven_audio = len(data) / 2 / 24000
    assert openai_audio > 20 and eleven_audio > 20
    # Rendering costs ~5% of real time on two idle cores; half of real time leaves room for a
    # busy machine and still fails by far if the lead cap applied.
    assert openai_wall < 0.5 * openai_audio
    assert eleven_wall < 0.5 * eleven_audio


def test_a_refused_request_is_answered_without_the_runner(
    server_factory: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []
    run_connection = http_response.run_connection

    async def counted(*args: Any) -> None:
        runs.append("run")
        await run_connection(*args)

    monkeypatch.setattr(http_response, "run_connection", counted)
    requests = {  # every HTTP protocol: path and body
        "/v1/audio/speech": {"input": "Hello.", "voice": "alloy", "response_format": "pcm"},
        "/v1/text-to-speech/joe?output_format=pcm_24000": {"text": "Hello."},
        "/tts/bytes": {
            "model_id": "sonic-2",
            "transcript": "Hello.",
            "voice": {"mode": "id", "id": "joe"},
            "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
        },
        "/v1/speak?encoding=linear16&sample_rate=24000": {"text": "Hello."},
    }
    with (
        server_factory(workers=1, max_streams=1) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        ws_url = url.replace("http://", "ws://") + "/v1/stream"
        with connect(ws_url) as holder:
            holder.send(json.dumps({"type": "start", "context_id": "held"}))  # the only stream
            deadline = time.monotonic() + 30
            while http.get("/readyz").status_code != 503:
                assert time.monotonic() < deadline, "the held stream never filled the server"
                time.sleep(0.02)
            for path, body in requests.items():
                response = http.post(path, json=body)
                assert response.status_code == 429, (path, response.text)
                assert response.headers["retry-after"]
        assert runs == []  # no request ran on the runner: no tasks, no teardown
        deadline = time.monotonic() + 30
        while http.get("/readyz").status_code != 200:  # the held stream's slot is free again
            assert time.monotonic() < deadline, "the held stream's slot never came back"
            time.sleep(0.02)
        admitted = http.post("/v1/audio/speech", json=requests["/v1/audio/speech"])
        assert admitted.status_code == 200 and admitted.content
    assert runs == ["run"]
