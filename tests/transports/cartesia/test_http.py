"""``POST /tts/bytes`` against a real server: the official ``cartesia`` SDK, and the request
Pipecat's ``CartesiaHttpTTSService`` and LiveKit's ``ChunkedStream`` send."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from cartesia import BadRequestError, Cartesia, NotFoundError

VOICE = {"mode": "id", "id": "a0e99841-438c-4a64-b679-ae501e7d6091"}  # maps to the default voice


@pytest.fixture
def sdk(server_url: str) -> Iterator[Cartesia]:
    with Cartesia(api_key="sk_test", base_url=server_url, max_retries=0) as client:
        yield client


def test_sdk_generate_streams_raw_pcm(sdk: Cartesia) -> None:
    output_format: Any = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000}
    with sdk.tts.with_streaming_response.generate(
        model_id="sonic-3",
        transcript="Hello from the bytes endpoint.",
        voice=VOICE,
        output_format=output_format,
        language="en",
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("audio/pcm")
        audio = b"".join(response.iter_bytes())
    samples = np.frombuffer(audio, dtype="<i2")
    assert len(audio) % 2 == 0 and len(samples) / 16000 > 1.0
    assert np.abs(samples).max() > 1000


def test_sdk_generate_wav(sdk: Cartesia) -> None:
    output_format: Any = {"container": "wav", "encoding": "pcm_s16le", "sample_rate": 22050}
    audio = sdk.tts.generate(
        model_id="sonic-3", transcript="A short file.", voice=VOICE, output_format=output_format
    ).read()
    assert audio[:4] == b"RIFF" and audio[8:12] == b"WAVE"
    channels, rate = struct.unpack("<HI", audio[22:28])
    assert (channels, rate) == (1, 22050)
    assert len(audio) > 44 + 22050  # more than half a second of 16-bit samples


def test_sdk_generate_mp3_takes_the_nearest_variant(sdk: Cartesia) -> None:
    output_format: Any = {"container": "mp3", "sample_rate": 44100, "bit_rate": 128000}
    with sdk.tts.with_streaming_response.generate(
        model_id="sonic-3", transcript="Compressed.", voice=VOICE, output_format=output_format
    ) as response:
        assert response.headers["content-type"] == "audio/mpeg"
        audio = b"".join(response.iter_bytes())
    # Bare MPEG frames: the first bytes are a frame sync.
    assert audio[0] == 0xFF and audio[1] & 0xE0 == 0xE0 and len(audio) > 1000


def test_sdk_errors_are_cartesia_shaped(sdk: Cartesia) -> None:
    output_format: Any = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000}
    with pytest.raises(NotFoundError) as missing:
        sdk.tts.generate(
            model_id="sonic-3", transcript="Hi.", voice="no-such-voice", output_format=output_format
        ).read()
    body = missing.value.body
    assert isinstance(body, dict) and body["error_code"] == "voice_not_found"
    assert body["title"] and "no-such-voice" in body["message"]
    ogg: Any = {"container": "ogg", "encoding": "pcm_s16le", "sample_rate": 24000}
    with pytest.raises(BadRequestError) as bad_format:
        sdk.tts.generate(
            model_id="sonic-3", transcript="Hi.", voice=VOICE, output_format=ogg
        ).read()
    assert isinstance(bad_format.value.body, dict)
    assert bad_format.value.body["error_code"] == "unsupported_format"


def test_sdk_a_language_the_voice_does_not_speak_is_refused(sdk: Cartesia) -> None:
    output_format: Any = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000}
    with pytest.raises(BadRequestError) as refused:
        sdk.tts.generate(
            model_id="sonic-3",
            transcript="こんにちは。",
            voice=VOICE,  # the default voice: joe, en_US
            output_format=output_format,
            language="ja",
        ).read()
    body = refused.value.body
    assert isinstance(body, dict) and body["error_code"] == "unsupported_language"
    assert body["message"] == "voice joe speaks en_US, not ja"


def _post(server_url: str, body: object, headers: dict[str, str] | None = None) -> httpx.Response:
    with httpx.Client(timeout=60) as client:
        return client.post(f"{server_url}/tts/bytes", json=body, headers=headers)


def test_pipecat_http_request_with_float_samples(server_url: str) -> None:
    """Pipecat 1.14's ``CartesiaHttpTTSService`` body and headers, asking for pcm_f32le."""
    body = {
        "model_id": "sonic-3.6",
        "transcript": "Floats, please.",
        "voice": VOICE,
        "output_format": {"container": "raw", "encoding": "pcm_f32le", "sample_rate": 24000},
        "language": "en",
        "generation_config": {"speed": 0.9, "volume": 1.0, "emotion": "calm"},
    }
    headers = {"Cartesia-Version": "2026-03-01", "X-API-Key": "sk_test"}
    response = _post(server_url, body, headers)
    assert response.status_code == 200
    samples = np.frombuffer(response.content, dtype="<f4")
    assert len(response.content) % 4 == 0 and len(samples) / 24000 > 0.5
    assert np.all(np.abs(samples) <= 1.0) and np.abs(samples).max() > 0.05
    scaled = samples.astype(np.float64) * 32768
    assert np.array_equal(scaled, np.round(scaled))  # converted 16-bit samples


@pytest.mark.parametrize(
    ("body", "status", "error_code"),
    [
        ({"transcript": "", "voice": VOICE}, 400, "invalid_request"),
        ({"transcript": 5, "voice": VOICE}, 400, "invalid_request"),
        ({"transcript": "Hi.", "voice": VOICE, "output_format": "pcm"}, 400, "invalid_request"),
        (
            {
                "transcript": "Hi.",
                "voice": VOICE,
                "output_format": {"container": "raw", "encoding": "pcm_alaw", "sample_rate": 48000},
            },
            400,
            "unsupported_format",
        ),
        (
            {
                "transcript": "Hi.",
                "voice": VOICE,
                "speed": "warp",
                "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 8000},
            },
            400,
            "invalid_voice_settings",
        ),
        ([1, 2, 3], 400, "invalid_request"),
    ],
)
def test_refused_bodies(server_url: str, body: object, status: int, error_code: str) -> None:
    response = _post(server_url, body)
    assert response.status_code == status
    error = response.json()
    assert error["error_code"] == error_code and error["title"] and error["message"]


def test_a_body_that_is_not_json(server_url: str) -> None:
    with httpx.Client(timeout=60) as client:
        response = client.post(f"{server_url}/tts/bytes", content=b"{nope")
    assert response.status_code == 400
    assert response.json()["title"] == "Invalid JSON"
