"""A Japanese Kokoro voice asked for with each protocol's language field, through the official
SDKs and clients against ``voxflow serve --kokoro --wyoming``: ElevenLabs ``language_code``,
Cartesia ``language``, a Deepgram Aura model of Japanese, the native ``language`` and Wyoming's
``voice.language``. Each answer is Japanese speech, counted in the metrics under the Japanese
voice. (OpenAI's speech API has no language field.)

One server for the module; it loads the Kokoro model at start-up. The text is short: each test
renders about a second of speech.
"""

from __future__ import annotations

import asyncio
import re
import urllib.request
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from cartesia import Cartesia
from elevenlabs.client import ElevenLabs
from openai import OpenAI

from tests.support.cartesia_sdk import S16_24K, sdk_connection
from tests.support.serve_process import serve_process
from tests.support.servers import free_port
from tests.support.wyoming_messages import AudioChunk, Synthesize, SynthesizeVoice
from voxflow.client import VoxflowClient, speak, stream_url

with warnings.catch_warnings():
    # The SDK probes websockets for a name it deprecated (InvalidStatusCode) when its speak
    # client is imported (lazily, on first use: imported here so that happens now).
    warnings.simplefilter("ignore", DeprecationWarning)
    import deepgram.speak.v1.client  # noqa: F401
    from deepgram import DeepgramClient
    from deepgram.environment import DeepgramClientEnvironment
    from wyoming.client import AsyncTcpClient

ALPHA = "kokoro:jf_alpha"
TEXT = "こんにちは、元気です。"
RATE = 24000
TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, int]]:
    """The HTTP base URL and the Wyoming port."""
    wyoming = free_port()
    args = ("--kokoro", "--wyoming", f"tcp://127.0.0.1:{wyoming}")
    with serve_process(args=args) as (_, port):
        yield f"http://127.0.0.1:{port}", wyoming


@pytest.fixture(scope="module")
def base_url(servers: tuple[str, int]) -> str:
    return servers[0]


def _streams(base_url: str, protocol: str) -> float:
    """``voxflow_streams_total`` for one protocol and the Japanese voice (0 before the first)."""
    with urllib.request.urlopen(base_url + "/metrics", timeout=30) as response:
        metrics = response.read().decode()
    total = 0.0
    for labels, value in re.findall(r"^voxflow_streams_total\{([^}]*)\} (\S+)$", metrics, re.M):
        if f'protocol="{protocol}"' in labels and f'voice="{ALPHA}"' in labels:
            total += float(value)
    return total


def _assert_speech(audio: bytes) -> None:
    """About a second of 24 kHz s16le speech, not silence."""
    assert len(audio) % 2 == 0
    samples = np.frombuffer(audio, dtype="<i2")
    assert 0.4 < len(samples) / RATE < 5.0
    assert np.abs(samples).max() > 2000


def test_elevenlabs_language_code_ja(base_url: str) -> None:
    with httpx.Client(timeout=TIMEOUT_S) as http:
        client = ElevenLabs(base_url=base_url, api_key="not-needed", httpx_client=http)
        audio = b"".join(
            client.text_to_speech.stream(
                voice_id=ALPHA, text=TEXT, language_code="ja", output_format="pcm_24000"
            )
        )
    _assert_speech(audio)
    assert _streams(base_url, "elevenlabs_http") == 1


def test_cartesia_language_ja(base_url: str) -> None:
    output_format: Any = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": RATE}
    with Cartesia(api_key="sk_test", base_url=base_url, max_retries=0) as sdk:
        audio = sdk.tts.generate(
            model_id="sonic-3",
            transcript=TEXT,
            voice={"mode": "id", "id": ALPHA},
            output_format=output_format,
            language="ja",
        ).read()
    _assert_speech(audio)
    assert _streams(base_url, "cartesia_http") == 1


def test_deepgram_a_japanese_aura_model_speaks_with_a_japanese_voice(base_url: str) -> None:
    ws = base_url.replace("http://", "ws://")
    environment = DeepgramClientEnvironment(
        base=base_url, production=ws, agent=ws, agent_rest=base_url
    )
    with httpx.Client(timeout=TIMEOUT_S) as http:
        sdk = DeepgramClient(
            api_key="not-needed", environment=environment, httpx_client=http, max_retries=0
        )
        audio = b"".join(
            sdk.speak.v1.audio.generate(
                text=TEXT, model="aura-2-izanami-ja", encoding="linear16", container="none"
            )
        )
    _assert_speech(audio)
    # The first Japanese voice in name order (the default voice, joe, speaks English).
    assert _streams(base_url, "deepgram_http") == 1


def test_native_language_ja(base_url: str) -> None:
    async def body() -> bytes:
        async with VoxflowClient.connect(stream_url(base_url)) as client:
            result = await speak(client, "ja", TEXT, voice=ALPHA, language="ja")
        assert result.errors == () and result.done is not None
        return result.audio

    _assert_speech(asyncio.run(asyncio.wait_for(body(), TIMEOUT_S)))
    assert _streams(base_url, "native") == 1


def test_wyoming_language_ja_picks_the_japanese_voice(servers: tuple[str, int]) -> None:
    base_url, port = servers

    async def body() -> bytes:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            request = Synthesize(text=TEXT, voice=SynthesizeVoice(language="ja"))
            await client.write_event(request.event())
            audio = b""
            while True:
                event = await client.read_event()
                assert event is not None and event.type != "error", event
                if AudioChunk.is_type(event.type):
                    audio += AudioChunk.from_event(event).audio
                if event.type == "audio-stop":
                    return audio

    _assert_speech(asyncio.run(asyncio.wait_for(body(), TIMEOUT_S)))
    assert _streams(base_url, "wyoming") == 1


def test_elevenlabs_timestamps_index_the_written_japanese_text(base_url: str) -> None:
    """One alignment entry a written character, as ElevenLabs gives them, in time order; the
    kanji of a number that the normaliser rewrote are timed where it is spoken."""
    text = "明日の14時に、3,000円のお支払いです。"
    with httpx.Client(timeout=TIMEOUT_S) as http:
        client = ElevenLabs(base_url=base_url, api_key="not-needed", httpx_client=http)
        response = client.text_to_speech.convert_with_timestamps(
            ALPHA, text=text, language_code="ja", output_format="pcm_24000"
        )
    alignment = response.alignment
    assert alignment is not None
    assert alignment.characters == list(text)
    starts = alignment.character_start_times_seconds
    assert starts == sorted(starts)
    # "3,000円" is spoken after "明日の14時に" and before "お支払い".
    assert starts[text.index("明日")] < starts[text.index("3,000")] < starts[text.index("お支払")]
    assert starts[text.index("お支払")] - starts[text.index("3,000")] > 0.3


def test_openai_speech_with_a_japanese_voice(base_url: str) -> None:
    """OpenAI's API has no language field: the voice's language is the text's."""
    with OpenAI(base_url=base_url + "/v1", api_key="not-needed", timeout=TIMEOUT_S) as client:
        audio = client.audio.speech.create(
            model="tts-1", voice=ALPHA, input=TEXT, response_format="pcm"
        ).content
    _assert_speech(audio)
    assert _streams(base_url, "openai") == 1


def test_cartesia_websocket_streams_japanese_tokens_with_word_timestamps(base_url: str) -> None:
    """LLM tokens of one to three characters over the SDK's WebSocket, as an agent streams
    them: speech, and word timestamps of the written words, in order."""
    text = "かしこまりました。明日の午後三時にお伺いします。"
    tokens = [text[i : i + 2] for i in range(0, len(text), 2)]
    with sdk_connection(base_url) as connection:
        ctx = connection.context(
            model_id="sonic-3",
            voice={"mode": "id", "id": ALPHA},
            output_format=S16_24K,
            language="ja",
            add_timestamps=True,
            timeout=TIMEOUT_S,
        )
        for token in tokens:
            ctx.push(token)
        ctx.no_more_inputs()
        events = list(ctx.receive())
    assert events[-1].type == "done", events[-1]
    audio = b"".join(e.audio or b"" for e in events if e.type == "chunk")
    assert len(audio) / 2 / RATE > 2.0
    words = [w for e in events if e.type == "timestamps" for w in e.word_timestamps.words]
    starts = [s for e in events if e.type == "timestamps" for s in e.word_timestamps.start]
    assert "".join(words) in (text, text.replace("。", ""))
    assert "明日" in words and starts == sorted(starts)
