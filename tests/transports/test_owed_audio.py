"""A reply's later sentences go out when their text arrives, not when the listener needs them, on
every WebSocket path an agent takes to a real server.

The reply is what broke Pipecat (issue 38): a short opener, a long sentence that gives the listener
seconds of audio in hand, then a question, each sent whole as the frameworks' sentence aggregators
send them (flushed, or with Cartesia's ``max_buffer_delay_ms: 0``), then the end. A server that
renders the question only shortly before its listener would run dry sends its last audio near the
end of the reply's playback; one that renders it at once, while its workers are free, sends it all
within a small part of it. The tests compare those two moments (a ratio, not a timing goal); the
Wyoming path has the same test in ``wyoming/test_tcp.py``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from tests.support.owed_audio import PCM_BYTES_PER_S, REPLY, Arrivals, assert_rendered_as_it_came
from voxflow import AudioEvent, DoneEvent, VoxflowClient, stream_url


@contextlib.contextmanager
def _paced(send: Callable[[str], None], end: Callable[[], None]) -> Iterator[None]:
    """Send each sentence of the reply when the LLM would have finished it, then the end, from a
    thread: the caller reads the answer meanwhile (``websockets``' sync connection sends and
    receives from different threads)."""

    def run() -> None:
        start = time.monotonic()
        for at, text in REPLY:
            time.sleep(max(0.0, start + at - time.monotonic()))
            send(text)
        end()

    sender = threading.Thread(target=run, name="test-llm")
    sender.start()
    try:
        yield
    finally:
        sender.join(30)
    assert not sender.is_alive()


def _ws(server_url: str, path: str) -> ClientConnection:
    return connect(server_url.replace("http://", "ws://") + path, max_size=None)


def _json(ws: ClientConnection) -> dict[str, Any]:
    message = json.loads(ws.recv(timeout=30))
    assert isinstance(message, dict)
    return message


def test_native_client_flushing_each_sentence(server_url: str) -> None:
    async def body() -> Arrivals:
        async with VoxflowClient.connect(stream_url(server_url)) as client:
            await client.start("a", output_format="pcm_24000")
            start = time.monotonic()
            for at, text in REPLY:
                await asyncio.sleep(max(0.0, start + at - time.monotonic()))
                await client.send_text("a", text)
                await client.flush("a")
            await client.end("a")
            arrivals: Arrivals = []
            async for event in client.events("a"):
                if isinstance(event, AudioEvent) and event.audio:
                    arrivals.append((event.received_at, event.duration_ms / 1000.0))
                elif isinstance(event, DoneEvent):
                    break
            return arrivals

    assert_rendered_as_it_came(asyncio.run(body()))


def test_cartesia_as_pipecat_sends_a_sentence_a_request(server_url: str) -> None:
    fields = {
        "context_id": "c",
        "model_id": "sonic-3",
        "voice": {"mode": "id", "id": "a0e99841-438c-4a64-b679-ae501e7d6091"},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
        "add_timestamps": True,
        "max_buffer_delay_ms": 0,
    }
    arrivals: Arrivals = []
    with (
        _ws(server_url, "/tts/websocket") as ws,
        _paced(
            lambda text: ws.send(json.dumps({**fields, "transcript": text, "continue": True})),
            lambda: ws.send(json.dumps({**fields, "transcript": "", "continue": False})),
        ),
    ):
        while (message := _json(ws))["type"] != "done":
            if message["type"] == "chunk":
                audio = base64.b64decode(message["data"])
                arrivals.append((time.monotonic(), len(audio) / PCM_BYTES_PER_S))
    assert_rendered_as_it_came(arrivals)


def test_elevenlabs_multi_stream_flushing_each_sentence(server_url: str) -> None:
    path = "/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM/multi-stream-input?output_format=pcm_24000"
    arrivals: Arrivals = []
    with _ws(server_url, path) as ws:
        ws.send(json.dumps({"text": " ", "context_id": "e"}))
        with _paced(
            lambda text: ws.send(json.dumps({"text": text, "context_id": "e", "flush": True})),
            lambda: ws.send(json.dumps({"context_id": "e", "close_context": True})),
        ):
            while not (message := _json(ws)).get("isFinal"):
                if message.get("audio"):
                    audio = base64.b64decode(message["audio"])
                    arrivals.append((time.monotonic(), len(audio) / PCM_BYTES_PER_S))
    assert_rendered_as_it_came(arrivals)


@pytest.mark.parametrize("flush_each", [True, False], ids=["flushed", "one-flush"])
def test_deepgram_speaking_each_sentence(server_url: str, flush_each: bool) -> None:
    path = "/v1/speak?model=aura-2-thalia-en&encoding=linear16&sample_rate=24000"
    arrivals: Arrivals = []
    with _ws(server_url, path) as ws:

        def speak(text: str) -> None:
            ws.send(json.dumps({"type": "Speak", "text": text}))
            if flush_each:
                ws.send(json.dumps({"type": "Flush"}))

        flushes = len(REPLY) + 1 if flush_each else 1
        with _paced(speak, lambda: ws.send(json.dumps({"type": "Flush"}))):
            while flushes:
                frame = ws.recv(timeout=30)
                if isinstance(frame, bytes):
                    arrivals.append((time.monotonic(), len(frame) / PCM_BYTES_PER_S))
                elif json.loads(frame).get("type") == "Flushed":
                    flushes -= 1
    assert_rendered_as_it_came(arrivals)
