"""``POST /v1/speak`` against a real server, driven by the official ``deepgram-sdk`` and by
``httpx`` sending what Pipecat's ``DeepgramHttpTTSService`` and LiveKit's ``ChunkedStream``
send (``container=none``, ``Authorization: Token ...``)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator

import httpx
import pytest

with warnings.catch_warnings():
    # The SDK probes websockets for a name it deprecated (InvalidStatusCode) when its speak
    # client is imported (lazily, on first use: imported here so that happens now).
    warnings.simplefilter("ignore", DeprecationWarning)
    import deepgram.speak.v1.client  # noqa: F401
    from deepgram import DeepgramClient
    from deepgram.core.api_error import ApiError
    from deepgram.environment import DeepgramClientEnvironment

QUERY = "INVALID_QUERY_PARAMETER"
TEXT = "Hello there. This is a short answer from a Deepgram client."


@pytest.fixture
def http(server_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server_url, timeout=60) as client:
        yield client


@pytest.fixture
def sdk(http: httpx.Client, server_url: str) -> DeepgramClient:
    # Our own httpx client, so its connections are closed when the test ends.
    ws = server_url.replace("http://", "ws://")
    environment = DeepgramClientEnvironment(
        base=server_url, production=ws, agent=ws, agent_rest=server_url
    )
    return DeepgramClient(
        api_key="not-needed", environment=environment, httpx_client=http, max_retries=0
    )


def test_sdk_default_request_is_a_wav_file(sdk: DeepgramClient) -> None:
    audio = b"".join(sdk.speak.v1.audio.generate(text=TEXT, model="aura-2-thalia-en"))
    # Deepgram's REST default: linear16 in a WAV container, 24 kHz mono.
    assert audio[:4] == b"RIFF" and audio[8:12] == b"WAVE"
    assert int.from_bytes(audio[24:28], "little") == 24000
    assert len(audio) > 44 + 24000  # more than half a second of 16-bit samples


@pytest.mark.parametrize(
    ("encoding", "extra", "starts"),
    [
        ("mp3", {}, (b"\xff",)),  # an MPEG frame sync, no ID3 tag
        ("opus", {"container": "ogg"}, (b"OggS",)),
        ("flac", {"sample_rate": 16000}, (b"fLaC",)),
        ("aac", {}, (b"\xff",)),  # ADTS
    ],
)
def test_sdk_compressed_encodings(
    sdk: DeepgramClient, encoding: str, extra: dict[str, object], starts: tuple[bytes, ...]
) -> None:
    audio = b"".join(
        sdk.speak.v1.audio.generate(text=TEXT, model="aura-asteria-en", encoding=encoding, **extra)
    )
    assert audio.startswith(starts) and len(audio) > 1000


def test_sdk_sees_deepgram_shaped_errors(sdk: DeepgramClient) -> None:
    with pytest.raises(ApiError) as refused:
        b"".join(sdk.speak.v1.audio.generate(text=TEXT, encoding="speex"))
    assert refused.value.status_code == 400
    body = refused.value.body
    assert isinstance(body, dict) and body["err_code"] == "INVALID_QUERY_PARAMETER"
    assert "speex" in body["err_msg"] and body["request_id"]


def test_sdk_a_model_of_a_language_no_voice_speaks_is_refused(sdk: DeepgramClient) -> None:
    # Deepgram has no language field: the model names it. This server speaks English only.
    with pytest.raises(ApiError) as refused:
        b"".join(sdk.speak.v1.audio.generate(text=TEXT, model="aura-2-izanami-ja"))
    assert refused.value.status_code == 400
    body = refused.value.body
    assert isinstance(body, dict) and body["err_code"] == "INVALID_QUERY_PARAMETER"
    assert "ja" in body["err_msg"] and "en_US" in body["err_msg"]


def test_pipecat_and_livekit_raw_pcm_request(http: httpx.Client) -> None:
    params = {
        "model": "aura-2-helena-en",
        "encoding": "linear16",
        "sample_rate": "16000",
        "container": "none",
        "mip_opt_out": "false",
    }
    headers = {"Authorization": "Token not-needed"}
    with http.stream(
        "POST", "/v1/speak", params=params, headers=headers, json={"text": TEXT}
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "audio/pcm"
        assert response.headers["dg-request-id"] and response.headers["dg-model-name"]
        assert response.headers["dg-char-count"] == str(len(TEXT))
        audio = b"".join(response.iter_bytes())
    assert len(audio) > 16000 and len(audio) % 2 == 0 and not audio.startswith(b"RIFF")


def test_mulaw_is_raw_at_8_khz(http: httpx.Client) -> None:
    response = http.post("/v1/speak", params={"encoding": "mulaw"}, json={"text": TEXT})
    assert response.status_code == 200 and response.headers["content-type"] == "audio/basic"
    assert len(response.content) > 8000  # one byte a sample: more than a second


@pytest.mark.parametrize(
    ("params", "body", "status", "err_code"),
    [
        ({}, b"not json", 400, "UNPARSABLE_CLIENT_MESSAGE"),
        ({}, json.dumps({"text": ""}).encode(), 400, "UNPARSABLE_CLIENT_MESSAGE"),
        ({}, json.dumps({"text": 5}).encode(), 400, "UNPARSABLE_CLIENT_MESSAGE"),
        ({}, json.dumps({"text": "a" * 2001}).encode(), 400, "INPUT_TOO_LONG"),
        ({"model": "nova-3"}, json.dumps({"text": TEXT}).encode(), 400, QUERY),
        ({"encoding": "mulaw", "container": "wav"}, b'{"text": "hi"}', 400, QUERY),
        ({"callback": "http://example.invalid/"}, b'{"text": "hi"}', 400, QUERY),
    ],
)
def test_refusals_are_deepgram_error_objects(
    http: httpx.Client, params: dict[str, str], body: bytes, status: int, err_code: str
) -> None:
    response = http.post(
        "/v1/speak", params=params, content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == status
    error = response.json()
    assert error["err_code"] == err_code and error["err_msg"]
    assert error["request_id"] == response.headers["dg-request-id"]
