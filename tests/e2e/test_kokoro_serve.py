"""``voxflow serve --kokoro`` as an operator runs it: the Kokoro voices listed, spoken through the
official OpenAI SDK and the native WebSocket client, and an OpenAI voice name aliased to one.

One server for the module; it loads the Kokoro model (and af_heart) at start-up.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import urllib.request
from collections.abc import Iterator

import numpy as np
import openai
import pytest

from tests.support.serve_process import serve_process
from voxflow.client import VoxflowClient, speak, stream_url

HEART = "kokoro:af_heart"
TEXT = "Thanks for calling, have a great day!"  # about 2.6 s
WORDS = ["Thanks", "for", "calling", "have", "a", "great", "day"]
TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    args = ("--kokoro", "--voice-alias", "alloy=kokoro:af_heart")
    with serve_process(args=args) as (_, port):
        yield f"http://127.0.0.1:{port}"


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
