"""The official client SDKs against voxflow: ElevenLabs' (HTTP, and its realtime WebSocket
helper), OpenAI's, and the `wyoming` package's TCP client."""

from __future__ import annotations

import asyncio
import base64
import ssl
import time

import httpx
import openai
import pytest
import voxflow_checks as checks
from elevenlabs.client import ElevenLabs
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from conftest import VoxflowServer


@pytest.fixture
def eleven(voxflow: VoxflowServer):  # type: ignore[no-untyped-def]
    with httpx.Client(timeout=60) as http:
        yield ElevenLabs(api_key="unused", base_url=voxflow.http_url, httpx_client=http)


async def test_elevenlabs_sdk_convert_and_stream(voxflow: VoxflowServer, eleven, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks("elevenlabs sdk")
    for name, call in (
        ("convert", eleven.text_to_speech.convert),
        ("stream", eleven.text_to_speech.stream),
    ):
        pcm = b"".join(
            await asyncio.to_thread(
                lambda call=call: list(call("joe", text=checks.REPLY, output_format="pcm_24000"))
            )
        )
        with c.check(f"{name}: audio"):
            checks.assert_audible(pcm, name)
        with c.check(f"{name}: duration"):
            await checks.assert_duration_like_reference(
                voxflow.http_url, checks.REPLY, checks.pcm_seconds(pcm, 24000), name
            )
    with c.check("logs"):
        logs.assert_clean("elevenlabs sdk")
    c.done()


async def test_elevenlabs_sdk_timestamps(voxflow: VoxflowServer, eleven, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks("elevenlabs sdk timestamps")
    whole = await asyncio.to_thread(
        eleven.text_to_speech.convert_with_timestamps,
        "joe",
        text=checks.REPLY,
        output_format="pcm_24000",
    )
    pcm = base64.b64decode(whole.audio_base_64)
    with c.check("convert_with_timestamps: audio"):
        checks.assert_audible(pcm, "convert_with_timestamps")
    with c.check("convert_with_timestamps: alignment"):
        assert whole.alignment is not None, "no alignment"
        assert "".join(whole.alignment.characters) == checks.REPLY
        checks.assert_word_timings(
            checks.words_from_characters(
                whole.alignment.characters, whole.alignment.character_start_times_seconds
            ),
            checks.REPLY,
            "convert_with_timestamps",
        )
    chunks = await asyncio.to_thread(
        lambda: list(
            eleven.text_to_speech.stream_with_timestamps(
                "joe", text=checks.REPLY, output_format="pcm_24000"
            )
        )
    )
    chars: list[str] = []
    starts: list[float] = []
    for chunk in chunks:
        if chunk.alignment is not None:
            chars += chunk.alignment.characters
            starts += chunk.alignment.character_start_times_seconds
    with c.check("stream_with_timestamps: audio"):
        pcm = b"".join(base64.b64decode(ch.audio_base_64) for ch in chunks if ch.audio_base_64)
        checks.assert_audible(pcm, "stream_with_timestamps")
    with c.check("stream_with_timestamps: alignment"):
        assert "".join(chars) == checks.REPLY
        checks.assert_word_timings(
            checks.words_from_characters(chars, starts), checks.REPLY, "stream_with_timestamps"
        )
    with c.check("logs"):
        logs.assert_clean("elevenlabs sdk")
    c.done()


def test_elevenlabs_sdk_voices(eleven) -> None:  # type: ignore[no-untyped-def]
    voices = eleven.voices.get_all().voices
    assert "joe" in [v.voice_id for v in voices]
    assert eleven.voices.get("joe").voice_id == "joe"


# The SDK itself reads the deprecated `ConnectionClosed.code` of websockets >= 13.1 when the
# server closes the socket at the end (elevenlabs 2.78, realtime_tts.py).
@pytest.mark.filterwarnings("ignore:ConnectionClosed.code is deprecated:DeprecationWarning")
def test_elevenlabs_sdk_convert_realtime(voxflow, voxflow_tls, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # RealtimeTextToSpeechClient rewrites the base URL's scheme to wss:// whatever it was
    # (elevenlabs 2.78, realtime_tts.py), so it runs against the TLS server. It sends
    # `{"text":" ","try_trigger_generation":true,"generation_config":{"chunk_length_schedule":
    # [50]}}`, the text in chunks ending with a space, `{"text":""}`, then reads audio until
    # the server closes the socket (any close code but 1000 raises).
    monkeypatch.setenv("SSL_CERT_FILE", str(voxflow_tls.certfile))
    trust = ssl.create_default_context(cafile=str(voxflow_tls.certfile))
    with httpx.Client(timeout=60, verify=trust) as http:
        client = ElevenLabs(api_key="unused", base_url=voxflow_tls.https_url, httpx_client=http)
        tokens = checks.llm_tokens(checks.REPLY)
        pcm = b"".join(
            client.text_to_speech.convert_realtime(
                "joe", text=iter(tokens), output_format="pcm_24000"
            )
        )
    checks.assert_audible(pcm, "convert_realtime")
    ref_s = checks.reference_seconds(voxflow.http_url, checks.REPLY)
    got_s = checks.pcm_seconds(pcm, 24000)
    assert abs(got_s / ref_s - 1) <= checks.DURATION_TOLERANCE, (got_s, ref_s)


def test_openai_sdk(voxflow: VoxflowServer) -> None:
    with openai.OpenAI(base_url=f"{voxflow.http_url}/v1", api_key="unused") as client:
        with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="alloy", input=checks.REPLY, response_format="pcm"
        ) as response:
            assert response.headers.get("x-request-id"), "no x-request-id header"
            started = time.monotonic()
            first: float | None = None
            chunks = []
            for chunk in response.iter_bytes():
                if first is None and chunk:
                    first = time.monotonic() - started
                chunks.append(chunk)
        pcm = b"".join(chunks)
        checks.assert_audible(pcm, "openai pcm")
        ref = checks.reference_seconds(voxflow.http_url, checks.REPLY)
        got = checks.pcm_seconds(pcm, 24000)
        assert abs(got / ref - 1) <= checks.DURATION_TOLERANCE, (got, ref)
        wav = client.audio.speech.create(
            model="gpt-4o-mini-tts", voice="nova", input="Hello there.", response_format="wav"
        )
        assert wav.content[:4] == b"RIFF"
        with pytest.raises(openai.BadRequestError) as refused:
            client.audio.speech.create(
                model="tts-1", voice="no-such-voice", input="Hello.", response_format="pcm"
            )
        assert refused.value.status_code == 400


async def test_wyoming_client(voxflow: VoxflowServer, logs) -> None:  # type: ignore[no-untyped-def]
    c = checks.Checks("wyoming")
    async with AsyncTcpClient("127.0.0.1", voxflow.wyoming_port) as client:
        await client.write_event(Describe().event())
        event = await asyncio.wait_for(client.read_event(), timeout=10)
        assert event is not None and Info.is_type(event.type), event
        info = Info.from_event(event)
        assert info.tts and info.tts[0].supports_synthesize_streaming
        assert "joe" in [v.name for v in info.tts[0].voices]

        # One-shot synthesize.
        await client.write_event(
            Synthesize(text=checks.REPLY, voice=SynthesizeVoice("joe")).event()
        )
        pcm, rate = await _read_audio(client)
        with c.check("synthesize: audio"):
            checks.assert_audible(pcm, "synthesize")
        with c.check("synthesize: duration"):
            await checks.assert_duration_like_reference(
                voxflow.http_url, checks.REPLY, checks.pcm_seconds(pcm, rate), "synthesize"
            )

        # Streaming synthesis, text as LLM tokens; audio must start before synthesize-stop.
        reader = asyncio.create_task(_read_stream(client))
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice("joe")).event())
        sentence_end = checks.first_sentence_end(checks.REPLY)
        sent, first_sentence_at = 0, None
        for token in checks.llm_tokens(checks.REPLY):
            await client.write_event(SynthesizeChunk(text=token).event())
            sent += len(token)
            if first_sentence_at is None and sent >= sentence_end:
                first_sentence_at = time.monotonic()
            await asyncio.sleep(checks.TOKEN_INTERVAL_S)
        stop_at = time.monotonic()
        await client.write_event(SynthesizeStop().event())
        pcm, rate, first_audio_at = await asyncio.wait_for(reader, timeout=60)
        assert first_sentence_at is not None and first_audio_at is not None
        with c.check("streaming: audio before synthesize-stop"):
            assert first_audio_at < stop_at, "no audio before synthesize-stop"
        with c.check("streaming: first audio"):
            # Negative: voxflow began speaking before the first sentence's end came.
            checks.record_first_audio(
                "wyoming", "synthesize-chunk", first_audio_at - first_sentence_at
            )
        with c.check("streaming: audio"):
            checks.assert_audible(pcm, "streaming")
        with c.check("streaming: duration"):
            await checks.assert_duration_like_reference(
                voxflow.http_url, checks.REPLY, checks.pcm_seconds(pcm, rate), "streaming"
            )
    with c.check("logs"):
        logs.assert_clean("wyoming")
    c.done()


async def _read_audio(client: AsyncTcpClient, started: bool = False) -> tuple[bytes, int]:
    """audio-start (unless `started`), the chunks, audio-stop: the PCM and its rate."""
    chunks: list[bytes] = []
    rate = 0
    while True:
        event = await asyncio.wait_for(client.read_event(), timeout=30)
        assert event is not None, "connection closed"
        if AudioStart.is_type(event.type):
            assert not started, "a second audio-start"
            rate = AudioStart.from_event(event).rate
            started = True
        elif AudioChunk.is_type(event.type):
            chunk = AudioChunk.from_event(event)
            rate = chunk.rate
            assert chunk.width == 2 and chunk.channels == 1
            chunks.append(chunk.audio)
        elif AudioStop.is_type(event.type):
            return b"".join(chunks), rate
        else:
            raise AssertionError(f"unexpected event {event.type}: {event.data}")


async def _read_stream(client: AsyncTcpClient) -> tuple[bytes, int, float | None]:
    """A streaming synthesis' answer up to synthesize-stopped: PCM, rate, first audio time."""
    first: float | None = None
    chunks: list[bytes] = []
    rate = 0
    stopped_audio = False
    while True:
        event = await client.read_event()
        assert event is not None, "connection closed"
        if AudioStart.is_type(event.type):
            rate = AudioStart.from_event(event).rate
        elif AudioChunk.is_type(event.type):
            if first is None:
                first = time.monotonic()
            chunks.append(AudioChunk.from_event(event).audio)
        elif AudioStop.is_type(event.type):
            stopped_audio = True
        elif SynthesizeStopped.is_type(event.type):
            assert stopped_audio, "synthesize-stopped before audio-stop"
            return b"".join(chunks), rate, first
        else:
            raise AssertionError(f"unexpected event {event.type}: {event.data}")
