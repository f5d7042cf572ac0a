from __future__ import annotations

import base64
import json
import threading
import time
import urllib.request
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from elevenlabs import VoiceSettings
from elevenlabs.client import ElevenLabs
from elevenlabs.core.api_error import ApiError
from elevenlabs.types import GetVoicesResponse, Voice

from tests.support.pcm import assert_same_pcm
from voxflow.engines.base import FloatArray, Utterance
from voxflow.engines.piper import PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.transports.elevenlabs.http import elevenlabs_voice_fields

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget."
)
EL_VOICE = "21m00Tcm4TlvDq8ikWAM"


@pytest.fixture
def client(server_url: str) -> Iterator[ElevenLabs]:
    # Our own httpx client, so its connections are closed when the test ends.
    with httpx.Client(timeout=60) as http:
        yield ElevenLabs(base_url=server_url, api_key="not-needed", httpx_client=http)


# How long a held window waits for the client's first audio before giving up (and failing the
# test): a guard against a hang, far above the milliseconds the first chunk needs even when busy.
FIRST_AUDIO_WAIT_S = 30.0


def test_stream_sends_pcm_as_it_is_rendered(
    client: ElevenLabs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ordering, not timing: every window after the first waits until the client has received
    # audio. A server that sent the response only once it was fully rendered would never send
    # those first bytes, and the held window would give up waiting.
    received = threading.Event()
    gave_up = threading.Event()
    windows: list[tuple[int, int]] = []
    lock = threading.Lock()
    render = PiperEngine.render

    def held_render(
        engine: PiperEngine,
        utterance: Utterance,
        start_frame: int,
        end_frame: int,
        threads: int | None = None,
    ) -> FloatArray:
        with lock:
            first = not windows
            windows.append((start_frame, end_frame))
        if not first and not gave_up.is_set() and not received.wait(FIRST_AUDIO_WAIT_S):
            gave_up.set()  # fail once, not once per window
        return render(engine, utterance, start_frame, end_frame, threads)

    monkeypatch.setattr(PiperEngine, "render", held_render)
    data = b""
    for chunk in client.text_to_speech.stream(
        voice_id=EL_VOICE,
        text=LONG,
        model_id="eleven_flash_v2_5",
        output_format="pcm_24000",
        voice_settings=VoiceSettings(stability=0.5, similarity_boost=0.7, speed=1.0),
    ):
        received.set()
        data += chunk
    assert not gave_up.is_set(), "no audio reached the client before the second window"
    # Several windows, so that holding back all but the first held back most of the audio.
    assert len(windows) > 3
    assert len(data) % 2 == 0
    assert 5.0 < len(data) / 2 / 24000 < 15.0
    assert np.abs(np.frombuffer(data, dtype="<i2")).max() > 1000


def test_speed_and_format_apply(client: ElevenLabs) -> None:
    text = "Speed changes how long this sentence takes to say."
    normal = b"".join(
        client.text_to_speech.convert(voice_id="joe", text=text, output_format="ulaw_8000")
    )
    fast = b"".join(
        client.text_to_speech.convert(
            voice_id="joe",
            text=text,
            output_format="ulaw_8000",
            voice_settings=VoiceSettings(speed=1.5),
        )
    )
    # One byte a sample at 8 kHz.
    assert 1.5 < len(normal) / 8000 < 6.0
    assert len(fast) < 0.85 * len(normal)


def test_seed_makes_audio_reproducible(client: ElevenLabs) -> None:
    def say(seed: int) -> bytes:
        return b"".join(
            client.text_to_speech.convert(
                voice_id="joe", text="Same words, same seed.", output_format="pcm_16000", seed=seed
            )
        )

    first = say(42)
    assert_same_pcm(first, say(42))
    # Another seed is other audio: the comparison is not blind to what the seed changes.
    with pytest.raises(AssertionError):
        assert_same_pcm(first, say(43))


def test_stream_with_timestamps_aligns_every_character(client: ElevenLabs) -> None:
    text = "Hello there, my friend. How are you doing today? "
    audio = b""
    characters: list[str] = []
    starts: list[float] = []
    ends: list[float] = []
    for chunk in client.text_to_speech.stream_with_timestamps(
        voice_id="joe", text=text, output_format="pcm_16000"
    ):
        audio += base64.b64decode(chunk.audio_base_64)
        if chunk.alignment is not None:
            assert chunk.normalized_alignment == chunk.alignment
            characters += chunk.alignment.characters
            starts += chunk.alignment.character_start_times_seconds
            ends += chunk.alignment.character_end_times_seconds
            # Times run from the start of the request's audio, not from the chunk (to the
            # millisecond, as ElevenLabs' alignment is).
            first = chunk.alignment.character_start_times_seconds[0]
            assert first <= len(audio) / 2 / 16000 + 0.001
    assert "".join(characters) == text
    assert starts == sorted(starts)
    assert all(end >= start for start, end in zip(starts, ends, strict=True))
    duration = len(audio) / 2 / 16000
    assert 1.5 < duration < 8.0
    assert ends[-1] <= duration + 0.01
    # Word starts spread over the audio rather than bunching at its start.
    assert starts[text.index("today")] > 0.6 * duration


def test_convert_with_timestamps_returns_one_object(client: ElevenLabs) -> None:
    text = "One object, all characters."
    response = client.text_to_speech.convert_with_timestamps(
        voice_id="joe", text=text, output_format="pcm_22050"
    )
    assert response.alignment is not None
    assert "".join(response.alignment.characters) == text
    audio = base64.b64decode(response.audio_base_64)
    assert len(audio) / 2 / 22050 > 1.0


@pytest.mark.parametrize(
    ("voice", "output_format", "status", "error"),
    [
        ("joe", "mp3_44100_999", 400, "invalid_output_format"),
        ("joe", "vorbis_44100", 400, "invalid_output_format"),
        ("nobody", "pcm_16000", 404, "voice_not_found"),
    ],
)
def test_errors_use_elevenlabs_shape(
    client: ElevenLabs, voice: str, output_format: str | None, status: int, error: str
) -> None:
    with pytest.raises(ApiError) as raised:
        b"".join(
            client.text_to_speech.stream(
                voice_id=voice,
                text="Hi.",
                output_format=output_format,
            )
        )
    assert raised.value.status_code == status
    assert raised.value.body["detail"]["status"] == error
    assert raised.value.body["detail"]["message"]


def test_a_language_the_voice_does_not_speak_is_refused(client: ElevenLabs) -> None:
    with pytest.raises(ApiError) as raised:
        b"".join(
            client.text_to_speech.stream(
                voice_id="joe", text="こんにちは。", language_code="ja", output_format="pcm_16000"
            )
        )
    assert raised.value.status_code == 400
    assert raised.value.body["detail"] == {
        "status": "unsupported_language",
        "message": "voice joe speaks en_US, not ja",
    }


def test_models_list_the_voices_languages(client: ElevenLabs) -> None:
    models = client.models.list()
    assert models[0].model_id == "eleven_multilingual_v2"
    for model in models:
        assert model.can_do_text_to_speech is True
        assert model.languages is not None
        assert [(lang.language_id, lang.name) for lang in model.languages] == [("en", "English")]


def test_text_over_the_limit_is_refused(client: ElevenLabs) -> None:
    with pytest.raises(ApiError) as raised:
        client.text_to_speech.convert_with_timestamps(
            voice_id="joe", text="x" * 10_001, output_format="pcm_16000"
        )
    assert raised.value.status_code == 400
    assert raised.value.body["detail"]["status"] == "max_character_limit_exceeded"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b'{"text": "Hi.", "voice_settings": {"speed": NaN}}', "invalid_json"),
        (b'{"text": "Hi.", "seed": Infinity}', "invalid_json"),
        (b'{"text": "Hi.", "voice_settings": {"speed": 1e400}}', "invalid_json"),
        (b'{"text": "a\\udc00"}', "invalid_message"),  # a lone surrogate
        (b'{"text": "Hi.", "voice_settings": {"speed": true}}', "invalid_voice_settings"),
        (
            b'{"text": "Hi.", "voice_settings": {"speed": ' + b"9" * 400 + b"}}",
            "invalid_voice_settings",
        ),
        (b'{"text": "Hi.", "seed": true}', "invalid_request"),
        (b'{"text": "Hi.", "seed": 4294967296}', "invalid_voice_settings"),
        (b"{nope", "invalid_json"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid_json"),
    ],
)
def test_bad_values_get_an_elevenlabs_400_not_a_500(
    server_url: str, body: bytes, status: str
) -> None:
    with httpx.Client(timeout=30) as http:
        response = http.post(
            server_url + "/v1/text-to-speech/joe/stream?output_format=pcm_16000",
            content=body,
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 400
    answer = json.loads(response.content, parse_constant=pytest.fail)
    assert answer["detail"]["status"] == status and answer["detail"]["message"]


def test_a_nul_in_the_text_is_spoken_and_aligned_as_a_space(client: ElevenLabs) -> None:
    # Left in, NUL ended the text inside the phonemizer: a 200, then a cut body.
    answer = client.text_to_speech.convert_with_timestamps(
        voice_id="joe", text="Hello\x00there.", output_format="pcm_16000"
    )
    assert answer.alignment is not None
    assert "".join(answer.alignment.characters) == "Hello there."
    assert len(base64.b64decode(answer.audio_base_64)) > 16_000  # half a second, at least


def test_voices_v2_and_single_voice(client: ElevenLabs) -> None:
    listing = client.voices.search(page_size=5)
    assert listing.total_count == 1 and not listing.has_more
    (voice,) = listing.voices
    assert voice.voice_id == "joe" and voice.name == "joe" and voice.category == "premade"
    assert voice.labels is not None and voice.labels["language"] == "en"
    assert client.voices.search(search="nobody").voices == []
    assert client.voices.get("joe").voice_id == "joe"
    mapped = client.voices.get(EL_VOICE)
    assert mapped.voice_id == EL_VOICE and mapped.name == "joe"
    with pytest.raises(ApiError) as raised:
        client.voices.get("nobody")
    assert raised.value.status_code == 404


def test_merged_voice_objects_parse_for_both_clients(server_url: str) -> None:
    # What GET /v1/voices serves once the app merges these fields into its own objects.
    registry = VoiceRegistry()
    with urllib.request.urlopen(server_url + "/v1/voices", timeout=10) as response:
        native = json.loads(response.read())["voices"]
    merged = [
        {**v, **elevenlabs_voice_fields(registry.get(v["name"]), v["default"])} for v in native
    ]
    for before, after in zip(native, merged, strict=True):
        assert {k: after[k] for k in before} == before  # voxflow's fields are unchanged
    parsed = GetVoicesResponse.model_validate({"voices": merged})
    assert [v.voice_id for v in parsed.voices] == [v["name"] for v in native]
    strict = Voice.model_validate(merged[0])
    assert strict.labels is not None and strict.labels.get("default") == "true"


def _active_contexts(server_url: str) -> float:
    with urllib.request.urlopen(server_url + "/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("voxflow_active_contexts "):
                return float(line.split()[1])
    raise AssertionError("no voxflow_active_contexts series")


def test_client_leaving_early_stops_the_synthesis(server_url: str) -> None:
    # Forty seconds of audio: paced to playback, it would keep its context busy for a while.
    body = json.dumps({"text": LONG * 4}).encode()
    request = urllib.request.Request(
        server_url + "/v1/text-to-speech/joe/stream?output_format=pcm_8000",
        data=body,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.read(4000)
        assert _active_contexts(server_url) >= 1
    deadline = time.monotonic() + 10
    while _active_contexts(server_url) > 0:
        assert time.monotonic() < deadline, "the synthesis went on after the client left"
        time.sleep(0.05)
