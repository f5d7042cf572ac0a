from __future__ import annotations

import base64
import io
import json
import struct
import time
import urllib.error
import urllib.request

import av
import numpy as np
import openai
import pytest

from tests.support.pcm import assert_same_pcm

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget."
)


def _pcm_duration_s(data: bytes) -> float:
    return len(data) / 2 / 24000


def test_pcm_streams_with_the_official_sdk(client: openai.OpenAI) -> None:
    # Warm the server first: the ordering below is about streaming, not a cold start.
    client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.", response_format="pcm")
    started = time.monotonic()
    arrivals: list[float] = []
    data = b""
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input=LONG, response_format="pcm"
    ) as response:
        assert response.headers["content-type"].startswith("audio/pcm")
        for chunk in response.iter_bytes():
            arrivals.append(time.monotonic() - started)
            data += chunk
    assert len(data) % 2 == 0
    assert 6.0 < _pcm_duration_s(data) < 14.0
    samples = np.frombuffer(data, dtype="<i2")
    assert np.abs(samples).max() > 1000
    # Streamed as rendered: the first bytes came long before the last.
    assert len(arrivals) > 3
    assert arrivals[0] < 0.5 * arrivals[-1]


def test_wav_has_a_streaming_header(client: openai.OpenAI) -> None:
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="nova", input="A short wave file.", response_format="wav"
    ) as response:
        assert response.headers["content-type"] == "audio/wav"
        data = response.read()
    assert data[:4] == b"RIFF" and data[8:16] == b"WAVEfmt "
    channels, rate, byte_rate, align, bits = struct.unpack("<HIIHH", data[22:36])
    assert (channels, rate, byte_rate, align, bits) == (1, 24000, 48000, 2, 16)
    assert data[36:40] == b"data"
    assert struct.unpack("<I", data[40:44])[0] == 0xFFFFFFFF  # length unknown while streaming
    assert 0.5 < _pcm_duration_s(data[44:]) < 3.0


def test_speed_and_voice_names(client: openai.OpenAI) -> None:
    def duration(**kwargs: object) -> float:
        response = client.audio.speech.create(
            model="tts-1", input="Counting one, two, three, four.", response_format="pcm", **kwargs
        )  # type: ignore[call-overload]
        return _pcm_duration_s(response.content)

    normal = duration(voice="joe")
    assert duration(voice="joe", speed=2.0) < 0.7 * normal
    assert duration(voice="shimmer") == pytest.approx(normal, rel=0.25)  # mapped to the default


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"response_format": "pcm", "voice": "nobody"}, "unknown voice"),
        ({"response_format": "ogg"}, "unsupported response_format"),
    ],
)
def test_unsupported_requests_get_a_clear_400(
    client: openai.OpenAI, kwargs: dict[str, str], message: str
) -> None:
    params = {"model": "tts-1", "voice": "alloy", "input": "Hi.", **kwargs}
    with pytest.raises(openai.BadRequestError, match=message):
        client.audio.speech.create(**params)  # type: ignore[arg-type]


def test_sse_stream_format(server_url: str) -> None:
    request = urllib.request.Request(
        server_url + "/v1/audio/speech",
        data=json.dumps(
            {
                "model": "tts-1",
                "input": "Server sent events.",
                "voice": "alloy",
                "response_format": "pcm",
                "stream_format": "sse",
            }
        ).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        body = response.read().decode()
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events[:-1]] == ["speech.audio.delta"] * (len(events) - 1)
    assert events[-1]["type"] == "speech.audio.done"
    usage = events[-1]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert 0.5 < _pcm_duration_s(audio) < 3.0


def _post_speech(server_url: str, body: bytes) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        server_url + "/v1/audio/speech", data=body, headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=10)
    try:
        answer = json.loads(error.value.read(), parse_constant=pytest.fail)
    finally:
        error.value.close()
    return error.value.code, answer


def test_empty_input_is_rejected_in_openai_shape(server_url: str) -> None:
    body = json.dumps({"input": "", "voice": "alloy", "response_format": "pcm"}).encode()
    status, answer = _post_speech(server_url, body)
    assert status == 400
    assert answer["error"] == {
        "message": "input: String should have at least 1 character",
        "type": "invalid_request_error",
        "param": "input",
        "code": "invalid_request",
    }


@pytest.mark.parametrize(
    ("body", "code"),
    [
        # Python's json.loads (FastAPI's) takes these; JSON has no such numbers.
        (b'{"input": "Hi.", "speed": NaN}', "invalid_json"),
        (b'{"input": "Hi.", "speed": Infinity}', "invalid_json"),
        (b'{"input": "Hi.", "speed": 1e400}', "invalid_json"),
        (b'{"input": "Hi.", "instructions": -Infinity}', "invalid_json"),
        (b'{"input": "a\\ud800b"}', "invalid_message"),  # a lone surrogate
        (b'{"input": "Hi.", "speed": true}', "invalid_request"),  # a boolean is no number
        (b'{"input": "Hi.", "seed": -1}', "invalid_voice_settings"),
        (b'{"input": "Hi.", "speed": 0}', "invalid_voice_settings"),
        (b'["Hi."]', "invalid_message"),
    ],
)
def test_bad_values_get_an_openai_400_not_a_500(server_url: str, body: bytes, code: str) -> None:
    status, answer = _post_speech(server_url, body)
    assert status == 400
    error = answer["error"]
    assert isinstance(error, dict)
    assert error["code"] == code and error["type"] == "invalid_request_error"


def test_a_nul_in_the_input_is_spoken_as_a_space(client: openai.OpenAI) -> None:
    # Left in, NUL ended the text inside the phonemizer and the request failed.
    audio = {}
    for text in ("Hello\x00there.", "Hello there."):
        audio[text] = client.audio.speech.create(
            model="tts-1",
            voice="alloy",
            input=text,
            response_format="pcm",
            extra_body={"seed": 3},  # voxflow's extension: the same audio for the same text
        ).content
    assert_same_pcm(audio["Hello\x00there."], audio["Hello there."])
    assert _pcm_duration_s(audio["Hello there."]) > 0.5


@pytest.mark.parametrize(
    ("response_format", "media_type"),
    [
        ("mp3", "audio/mpeg"),
        ("opus", "audio/ogg"),
        ("aac", "audio/aac"),
        ("flac", "audio/flac"),
        ("wav", "audio/wav"),
    ],
)
def test_compressed_formats_stream_and_decode(
    client: openai.OpenAI, response_format: str, media_type: str
) -> None:
    text = "Compressed audio, streamed as it is rendered."
    with client.audio.speech.with_streaming_response.create(
        model="tts-1",
        voice="alloy",
        input=text,
        response_format=response_format,  # type: ignore[arg-type]
    ) as response:
        assert response.headers["content-type"].startswith(media_type)
        data = response.read()
    pcm = client.audio.speech.create(
        model="tts-1", voice="alloy", input=text, response_format="pcm"
    ).content
    expected_s = _pcm_duration_s(pcm)
    with av.open(io.BytesIO(data)) as container:
        decoded = sum(frame.samples / frame.sample_rate for frame in container.decode(audio=0))
    # Within codec priming and frame padding of the PCM rendering of the same text.
    assert abs(decoded - expected_s) < 0.15 + 0.15 * expected_s
