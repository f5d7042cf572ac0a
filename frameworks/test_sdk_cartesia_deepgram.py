"""The official Cartesia and Deepgram SDKs against voxflow's Cartesia (`/tts/websocket`,
`/tts/bytes`) and Deepgram (`/v1/speak`) endpoints.

cartesia 4.2: `Cartesia(base_url=..., websocket_base_url=...)` (without `websocket_base_url`
the SDK turns the base URL into wss://); `tts.websocket_connect()` opens websockets' sync
client, and `connection.context(...)` sends `{"context_id", "model_id", "transcript", "voice",
"output_format", "continue": true, "add_timestamps"}` per `push`, `"transcript": ""` with
`"continue": false` at `no_more_inputs()`, and reads the context's events up to `done`.
deepgram-sdk 7.17: `DeepgramClientEnvironment(base=HTTP, production=WS, ...)`; `speak.v1.connect`
opens `ws://HOST/v1/speak?model=...&encoding=...&sample_rate=...` and sends `Speak`, `Flush`,
`Clear`, `Close` as their JSON messages; `speak.v1.audio.generate` POSTs `{"text": ...}` to
`/v1/speak` and streams the body.
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import voxflow_checks as checks
from cartesia import Cartesia

from conftest import VoxflowServer

with warnings.catch_warnings():
    # deepgram-sdk probes websockets for a name it deprecated (InvalidStatusCode) when its
    # speak client is imported (lazily, on first use: imported here so that happens now).
    warnings.simplefilter("ignore", DeprecationWarning)
    import deepgram.speak.v1.client  # noqa: F401
    from deepgram import DeepgramClient
    from deepgram.environment import DeepgramClientEnvironment
    from deepgram.speak.v1.types import SpeakV1Metadata, SpeakV1Text

CARTESIA_VOICE: Any = {"mode": "id", "id": "a0e99841-438c-4a64-b679-ae501e7d6091"}
S16_24K: Any = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000}
DEEPGRAM_MODEL = "aura-2-thalia-en"


class PacedSender:
    """Sends a text's LLM tokens from a thread, 25 ms apart, while the test reads the audio
    (websockets' sync client sends and receives from two threads at once)."""

    def __init__(self, send: Callable[[str], None], text: str, then: Callable[[], None]) -> None:
        self.first_sentence_at: float | None = None
        self.error: BaseException | None = None
        self._send, self._text, self._then = send, text, then
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            sentence_end = checks.first_sentence_end(self._text)
            sent = 0
            for token in checks.llm_tokens(self._text):
                self._send(token)
                sent += len(token)
                if self.first_sentence_at is None and sent >= sentence_end:
                    self.first_sentence_at = time.monotonic()
                time.sleep(checks.TOKEN_INTERVAL_S)
            self._then()
        except BaseException as e:  # reported by join()
            self.error = e

    def join(self) -> None:
        self._thread.join(timeout=60)
        assert not self._thread.is_alive(), "the sender did not finish"
        if self.error is not None:
            raise self.error


def check_audio(base_url: str, c: checks.Checks, what: str, text: str, pcm: bytes) -> None:
    with c.check(f"{what}: audio"):
        checks.assert_audible(pcm, what)
    with c.check(f"{what}: duration"):
        asyncio.run(
            checks.assert_duration_like_reference(
                base_url, text, checks.pcm_seconds(pcm, 24000), what
            )
        )


# --- cartesia ------------------------------------------------------------------------------


@pytest.fixture
def cartesia_client(voxflow: VoxflowServer) -> Iterator[Cartesia]:
    with Cartesia(
        api_key="unused",
        base_url=voxflow.http_url,
        websocket_base_url=voxflow.ws_url,
        max_retries=0,
    ) as client:
        yield client


def test_cartesia_sdk_websocket_contexts(voxflow: VoxflowServer, cartesia_client, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks("cartesia sdk websocket")
    with cartesia_client.tts.websocket_connect(
        # cartesia 4.2 calls websockets' connect() outside a with-block, which websockets
        # 17.1+ warns about unless asked for its legacy (same) behaviour.
        websocket_connection_options={"legacy": True}  # type: ignore[typeddict-unknown-key]
    ) as connection:
        # Two contexts one after the other on one socket, as a pooled agent does.
        for scenario, text in (("context", checks.REPLY), ("next context", checks.NEXT_REPLY)):
            ctx = connection.context(
                model_id="sonic-3",
                voice=CARTESIA_VOICE,
                output_format=S16_24K,
                language="en",
                add_timestamps=True,
                timeout=60,
            )
            sender = PacedSender(ctx.push, text, ctx.no_more_inputs)
            audio: list[bytes] = []
            timed: list[tuple[str, float]] = []
            first_audio_at: float | None = None
            kinds: list[str] = []
            for event in ctx.receive():
                kinds.append(event.type)
                if event.type == "chunk" and event.audio:
                    first_audio_at = first_audio_at or time.monotonic()
                    audio.append(event.audio)
                elif event.type == "timestamps" and event.word_timestamps is not None:
                    ts = event.word_timestamps
                    timed += zip(ts.words, ts.start, strict=True)
            sender.join()
            with c.check(f"{scenario}: events"):
                assert kinds and kinds[-1] == "done", f"the context did not end with done: {kinds}"
                assert set(kinds) <= {"chunk", "timestamps", "done"}, kinds
            check_audio(voxflow.http_url, c, scenario, text, b"".join(audio))
            with c.check(f"{scenario}: word timestamps"):
                checks.assert_word_timings(timed, text, scenario)
            with c.check(f"{scenario}: first audio"):
                first = (
                    None
                    if first_audio_at is None or sender.first_sentence_at is None
                    else first_audio_at - sender.first_sentence_at
                )
                checks.record_first_audio("cartesia sdk", f"websocket {scenario}", first)
    with c.check("logs"):
        logs.assert_clean("cartesia sdk")
    c.done()


def test_cartesia_sdk_bytes(voxflow: VoxflowServer, cartesia_client, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks("cartesia sdk bytes")
    request: dict[str, Any] = {
        "model_id": "sonic-3",
        "transcript": checks.REPLY,
        "voice": CARTESIA_VOICE,
        "output_format": S16_24K,
        "language": "en",
    }
    pcm = cartesia_client.tts.generate(**request).read()
    check_audio(voxflow.http_url, c, "generate", checks.REPLY, pcm)
    with cartesia_client.tts.with_streaming_response.generate(**request) as response:
        with c.check("streamed generate: content type"):
            assert response.headers["content-type"].startswith("audio/pcm"), response.headers
        pcm = b"".join(response.iter_bytes())
    check_audio(voxflow.http_url, c, "streamed generate", checks.REPLY, pcm)
    with c.check("logs"):
        logs.assert_clean("cartesia sdk")
    c.done()


# --- deepgram ------------------------------------------------------------------------------


@pytest.fixture
def deepgram_client(voxflow: VoxflowServer) -> Iterator[DeepgramClient]:
    # Our own httpx client, so that its connections are closed when the test ends.
    with httpx.Client(timeout=60) as http:
        environment = DeepgramClientEnvironment(
            base=voxflow.http_url,
            production=voxflow.ws_url,
            agent=voxflow.ws_url,
            agent_rest=voxflow.http_url,
        )
        yield DeepgramClient(
            api_key="unused", environment=environment, httpx_client=http, max_retries=0
        )


def _until(socket: Any, kind: str) -> tuple[bytes, float | None, list[Any]]:
    """Read until a message of `kind`: the audio before it, when it began, and every other
    message (the last one is of `kind`)."""
    audio = bytearray()
    first_audio_at: float | None = None
    messages: list[Any] = []
    while True:
        message = socket.recv()
        if isinstance(message, bytes):
            first_audio_at = first_audio_at or time.monotonic()
            audio += message
            continue
        messages.append(message)
        if getattr(message, "type", None) == kind:
            return bytes(audio), first_audio_at, messages


def _first_audio(socket: Any) -> bytes:
    """Read up to the first audio frame (and return it)."""
    while not isinstance(message := socket.recv(), bytes):
        pass
    return message


def test_deepgram_sdk_speak_websocket(voxflow: VoxflowServer, deepgram_client, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks("deepgram sdk websocket")
    with deepgram_client.speak.v1.connect(
        model=DEEPGRAM_MODEL, encoding="linear16", sample_rate=24000
    ) as socket:
        with c.check("metadata first"):
            first = socket.recv()
            assert isinstance(first, SpeakV1Metadata) and first.request_id, first

        # A reply as LLM tokens, one Speak each, then Flush -> Flushed after its audio.
        sender = PacedSender(
            lambda token: socket.send_text(SpeakV1Text(text=token)),
            checks.REPLY,
            socket.send_flush,
        )
        pcm, first_audio_at, messages = _until(socket, "Flushed")
        sender.join()
        with c.check("reply: Flushed"):
            assert [m.type for m in messages] == ["Flushed"], messages
        check_audio(voxflow.http_url, c, "reply", checks.REPLY, pcm)
        with c.check("reply: first audio"):
            assert first_audio_at is not None and sender.first_sentence_at is not None
            # Negative: voxflow began speaking before the first sentence's end came.
            checks.record_first_audio(
                "deepgram sdk", "speak websocket", first_audio_at - sender.first_sentence_at
            )

        # A long reply interrupted: Clear -> Cleared, no Flushed for the Flush it overtook.
        for token in checks.llm_tokens(checks.LONG_REPLY):
            socket.send_text(SpeakV1Text(text=token))
        socket.send_flush()
        first_frame = _first_audio(socket)
        socket.send_clear()
        rest, _, messages = _until(socket, "Cleared")
        heard = first_frame + rest
        with c.check("barge-in: Cleared"):
            assert [m.type for m in messages] == ["Cleared"], messages
        with c.check("barge-in: the turn stopped"):
            # Cleared at its first audio: far less than the 40 s reply came (only what was on
            # its way when Clear came).
            assert checks.pcm_seconds(heard, 24000) < 5, checks.pcm_seconds(heard, 24000)
        with c.check("barge-in: server stops rendering"):
            asyncio.run(checks.assert_rendering_stops(voxflow.http_url, "deepgram Clear"))

        # The next turn: only its own audio (none of the cleared one), then Flushed.
        for token in checks.llm_tokens(checks.NEXT_REPLY):
            socket.send_text(SpeakV1Text(text=token))
        socket.send_flush()
        pcm, _, messages = _until(socket, "Flushed")
        with c.check("after Clear: Flushed"):
            assert [m.type for m in messages] == ["Flushed"], messages
        check_audio(voxflow.http_url, c, "after Clear", checks.NEXT_REPLY, pcm)

        # Close: nothing left to say, the server closes the socket normally.
        socket.send_close()
        with c.check("Close"):
            rest = list(socket)
            assert rest == [], f"after Close: {rest[:5]}"
    with c.check("logs"):
        logs.assert_clean("deepgram sdk")
    c.done()


def test_deepgram_sdk_speak_http(voxflow: VoxflowServer, deepgram_client, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks("deepgram sdk http")
    pcm = b"".join(
        deepgram_client.speak.v1.audio.generate(
            text=checks.REPLY,
            model=DEEPGRAM_MODEL,
            encoding="linear16",
            container="none",
            sample_rate=24000,
        )
    )
    check_audio(voxflow.http_url, c, "generate", checks.REPLY, pcm)
    with c.check("logs"):
        logs.assert_clean("deepgram sdk")
    c.done()
