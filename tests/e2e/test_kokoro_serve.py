"""``voxflow serve --kokoro --wyoming`` as an operator runs it: the Kokoro voices listed, spoken
through the official OpenAI SDK and the native WebSocket client, an OpenAI voice name aliased to
one, and a Japanese voice asked for with each protocol's language field through the official SDKs
and clients (ElevenLabs ``language_code``, Cartesia ``language``, a Deepgram Aura model of
Japanese, the native ``language`` and Wyoming's ``voice.language``; OpenAI's speech API has none).
Each answer is counted in the metrics under the voice that spoke it.

One server for the module; it loads the Kokoro model, af_heart and a Japanese voice at start-up.
The texts are short: each test renders one to three seconds of speech.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import urllib.request
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import openai
import pytest
from cartesia import Cartesia
from elevenlabs.client import ElevenLabs

from tests.support.cartesia_sdk import S16_24K, sdk_connection
from tests.support.serve_process import serve_process
from tests.support.servers import free_port
from tests.support.wyoming_messages import AudioChunk, Synthesize, SynthesizeVoice
from voxflow.client import ContextRecorder, ContextResult, VoxflowClient, speak, stream_url

with warnings.catch_warnings():
    # The SDK probes websockets for a name it deprecated (InvalidStatusCode) when its speak
    # client is imported (lazily, on first use: imported here so that happens now).
    warnings.simplefilter("ignore", DeprecationWarning)
    import deepgram.speak.v1.client  # noqa: F401
    from deepgram import DeepgramClient
    from deepgram.environment import DeepgramClientEnvironment
    from wyoming.client import AsyncTcpClient

HEART = "kokoro:af_heart"
TEXT = "Thanks for calling, have a great day!"  # about 2.6 s
WORDS = ["Thanks", "for", "calling", "have", "a", "great", "day"]
TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, int]]:
    """The HTTP base URL and the Wyoming port."""
    wyoming = free_port()
    args = (
        "--kokoro",
        "--voice-alias",
        "alloy=kokoro:af_heart",
        "--wyoming",
        f"tcp://127.0.0.1:{wyoming}",
    )
    with serve_process(args=args) as (_, port):
        yield f"http://127.0.0.1:{port}", wyoming


@pytest.fixture(scope="module")
def base_url(servers: tuple[str, int]) -> str:
    return servers[0]


@pytest.fixture
def client(base_url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=base_url + "/v1", api_key="not-needed", max_retries=0, timeout=TIMEOUT_S
    ) as c:
        yield c


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        body: bytes = response.read()
    return body


def _voices(base_url: str) -> dict[str, dict[str, object]]:
    listing = json.loads(_get(base_url + "/v1/voices"))
    return {voice["name"]: voice for voice in listing["voices"]}


def _streams(base_url: str, protocol: str, voice: str) -> float:
    """``voxflow_streams_total`` for one protocol and voice (0 before the first)."""
    metrics = _get(base_url + "/metrics").decode()
    pattern = r"^voxflow_streams_total\{([^}]*)\} (\S+)$"
    total = 0.0
    for labels, value in re.findall(pattern, metrics, re.MULTILINE):
        if f'protocol="{protocol}"' in labels and f'voice="{voice}"' in labels:
            total += float(value)
    return total


def test_the_kokoro_voices_are_listed(base_url: str) -> None:
    voices = _voices(base_url)
    assert voices[HEART]["sample_rate"] == 24000
    assert voices[HEART]["language"] == voices["joe"]["language"] == "en_US"
    assert voices["kokoro:bm_george"]["language"] == "en_GB"
    assert voices["kokoro:jf_alpha"]["language"] == voices["kokoro:jm_kumo"]["language"] == "ja_JP"
    assert sum(name.startswith("kokoro:") for name in voices) == 28 + 5
    assert voices["joe"]["default"] is True and voices[HEART]["default"] is False


def test_the_kokoro_voices_are_labelled_kokoro(base_url: str) -> None:
    heart = _voices(base_url)[HEART]
    assert heart["labels"] == {"language": "en", "locale": "en-US", "engine": "kokoro"}
    assert "Piper" not in str(heart["description"])


def test_the_openai_sdk_speaks_a_kokoro_voice(base_url: str, client: openai.OpenAI) -> None:
    data = b""
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice=HEART, input=TEXT, response_format="pcm"
    ) as response:
        assert response.headers["content-type"].startswith("audio/pcm")
        for chunk in response.iter_bytes():
            data += chunk
    assert len(data) % 2 == 0
    samples = np.frombuffer(data, dtype="<i2")
    duration_s = len(samples) / 24000  # OpenAI's pcm: 24 kHz s16le mono, Kokoro's own rate
    assert 1.5 < duration_s < 4.5
    assert np.abs(samples).max() > 3000
    assert _streams(base_url, "openai", HEART) == 1


def test_the_native_client_gets_kokoro_audio_and_word_timestamps(base_url: str) -> None:
    async def body() -> None:
        async with VoxflowClient.connect(stream_url(base_url)) as ws:
            result = await speak(ws, "k", TEXT, voice=HEART)
        assert result.errors == () and result.done is not None
        assert len(result.audio) == pytest.approx(result.audio_ms * 48, abs=2)  # 24 kHz s16le
        assert 1500 < result.audio_ms < 4500
        samples = np.frombuffer(result.audio, dtype="<i2")
        assert np.abs(samples).max() > 3000
        words = result.words
        assert [w.word for w in words] == WORDS
        assert [TEXT[w.char_start : w.char_end] for w in words] == WORDS
        assert words[0].start_ms > 0
        for before, after in itertools.pairwise(words):
            assert before.start_ms <= before.end_ms <= after.start_ms
        # The stream's trailing silence is trimmed up to the last word's end, no further.
        assert result.audio_ms - 500 < words[-1].end_ms <= result.audio_ms

    asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))
    assert _streams(base_url, "native", HEART) == 1


def test_a_voice_alias_makes_an_openai_voice_speak_kokoro(
    base_url: str, client: openai.OpenAI
) -> None:
    # Without the alias "alloy" is OpenAI's name for the default voice (joe, Piper).
    before = _streams(base_url, "openai", "joe")
    kokoro_before = _streams(base_url, "openai", "kokoro:af_heart")
    audio = client.audio.speech.create(
        model="tts-1", voice="alloy", input=TEXT, response_format="pcm"
    ).content
    assert 1.5 < len(audio) / 2 / 24000 < 4.5
    assert _streams(base_url, "openai", "kokoro:af_heart") == kokoro_before + 1
    assert _streams(base_url, "openai", "joe") == before == 0


# -- Japanese ------------------------------------------------------------------------------------

ALPHA = "kokoro:jf_alpha"
JAPANESE = "こんにちは、元気です。"
RATE = 24000


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
                voice_id=ALPHA, text=JAPANESE, language_code="ja", output_format="pcm_24000"
            )
        )
    _assert_speech(audio)
    assert _streams(base_url, "elevenlabs_http", ALPHA) == 1


def test_cartesia_language_ja(base_url: str) -> None:
    output_format: Any = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": RATE}
    with Cartesia(api_key="sk_test", base_url=base_url, max_retries=0) as sdk:
        audio = sdk.tts.generate(
            model_id="sonic-3",
            transcript=JAPANESE,
            voice={"mode": "id", "id": ALPHA},
            output_format=output_format,
            language="ja",
        ).read()
    _assert_speech(audio)
    assert _streams(base_url, "cartesia_http", ALPHA) == 1


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
                text=JAPANESE, model="aura-2-izanami-ja", encoding="linear16", container="none"
            )
        )
    _assert_speech(audio)
    # The first Japanese voice in name order (the default voice, joe, speaks English).
    assert _streams(base_url, "deepgram_http", ALPHA) == 1


def test_native_language_ja(base_url: str) -> None:
    async def body() -> bytes:
        async with VoxflowClient.connect(stream_url(base_url)) as client:
            result = await speak(client, "ja", JAPANESE, voice=ALPHA, language="ja")
        assert result.errors == () and result.done is not None
        return result.audio

    _assert_speech(asyncio.run(asyncio.wait_for(body(), TIMEOUT_S)))
    assert _streams(base_url, "native", ALPHA) == 1


# A reply whose lead (はい、来週の月曜日に) is said as it is, then the rest of its sentence.
LEAD_REPLY = "はい、来週の月曜日に会議室を予約しました。"


def _assert_each_word_once_in_order(result: ContextResult, words: tuple[str, ...]) -> None:
    """``result`` said ``LEAD_REPLY`` from its first word to its last, each of ``words`` once,
    its word timings indexing the written text in time order."""
    assert result.errors == () and result.done is not None
    _assert_speech(result.audio)
    spans = [(w.char_start, w.char_end) for w in result.words]
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    said = "".join(LEAD_REPLY[start:end] for start, end in spans)
    assert said.startswith("はい") and said.endswith("しました")
    assert all(said.count(word) == 1 for word in words)
    starts = [w.start_ms for w in result.words]
    assert starts == sorted(starts)


def test_a_japanese_lead_read_on_into_its_next_phrase_says_each_word_once(base_url: str) -> None:
    """The whole text at once: the lead is read on into 会議室を, which only the piece after it
    says."""

    async def body() -> ContextResult:
        async with VoxflowClient.connect(stream_url(base_url)) as client:
            return await speak(client, "lead", LEAD_REPLY, voice=ALPHA, language="ja")

    result = asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))
    _assert_each_word_once_in_order(result, ("会議室",))


def test_a_japanese_lead_streamed_as_tokens_says_each_word_once(base_url: str) -> None:
    """LLM tokens at an LLM's pace: the lead is cut before 会議室を is whole and said as it is,
    then the rest of its sentence as a piece of its own. Every word is heard once, in order,
    and the reply lasts about as long as it does sent whole (a lead heard twice, or cut short,
    would not)."""
    tokens = [LEAD_REPLY[i : i + 2] for i in range(0, len(LEAD_REPLY), 2)]

    async def body() -> tuple[ContextResult, ContextResult]:
        async with VoxflowClient.connect(stream_url(base_url)) as client:
            recorder = ContextRecorder("tokens")
            await client.start("tokens", voice=ALPHA, output_format="pcm_24000", language="ja")
            for token in tokens:
                recorder.text_sent(await client.send_text("tokens", token))
                await asyncio.sleep(0.02)  # an LLM's pace
            await client.end("tokens")
            streamed = await recorder.collect(client, stop_on_error=True)
            whole = await speak(client, "whole", LEAD_REPLY, voice=ALPHA, language="ja")
            return streamed, whole

    streamed, whole = asyncio.run(asyncio.wait_for(body(), TIMEOUT_S))
    _assert_each_word_once_in_order(streamed, ("月曜日", "会議室"))
    assert 0.8 < len(streamed.audio) / len(whole.audio) < 1.25


def test_wyoming_language_ja_picks_the_japanese_voice(servers: tuple[str, int]) -> None:
    base_url, port = servers

    async def body() -> bytes:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            request = Synthesize(text=JAPANESE, voice=SynthesizeVoice(language="ja"))
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
    assert _streams(base_url, "wyoming", ALPHA) == 1


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


def test_openai_speech_with_a_japanese_voice(base_url: str, client: openai.OpenAI) -> None:
    """OpenAI's API has no language field: the voice's language is the text's."""
    audio = client.audio.speech.create(
        model="tts-1", voice=ALPHA, input=JAPANESE, response_format="pcm"
    ).content
    _assert_speech(audio)
    assert _streams(base_url, "openai", ALPHA) == 1


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
