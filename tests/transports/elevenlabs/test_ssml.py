"""``enable_ssml_parsing`` against a real server: the real ``elevenlabs`` SDK over HTTP, and the
WebSocket as Pipecat and LiveKit drive it (the flag in the query, text streamed in chunks that
split the tags). Alignments index the text with its markup left out."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from elevenlabs.client import ElevenLabs
from elevenlabs.core.api_error import ApiError
from elevenlabs.realtime_tts import text_chunker
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

DOCUMENT = (
    'Your code is <say-as interpret-as="characters">AB12</say-as>.<break time="1s"/> '
    'The <sub alias="United Nations">UN</sub> met, and <phoneme alphabet="cmu-arpabet" '
    'ph="T AH0 M EY1 T OW2">tomato</phoneme> AT&T too.'
)
WRITTEN = "Your code is AB12. The UN met, and tomato AT&T too."
EL_VOICE = "21m00Tcm4TlvDq8ikWAM"
SSML_ON = {"additional_query_parameters": {"enable_ssml_parsing": "true"}}


@pytest.fixture
def client(server_url: str) -> Iterator[ElevenLabs]:
    with httpx.Client(timeout=60) as http:
        yield ElevenLabs(base_url=server_url, api_key="not-needed", httpx_client=http)


def _char_times(chars: list[str], starts: list[float], text: str, word: str) -> tuple[float, float]:
    """When ``word`` of ``text`` starts and its last character ends, from an alignment."""
    assert "".join(chars).rstrip() == text.rstrip()
    at = text.index(word)
    return starts[at], starts[at + len(word) - 1]


def test_the_sdk_with_ssml_parsing_times_the_written_text(client: ElevenLabs) -> None:
    response = client.text_to_speech.convert_with_timestamps(
        "joe", text=DOCUMENT, output_format="pcm_22050", request_options=SSML_ON
    )
    alignment = response.alignment
    assert alignment is not None
    chars, starts = alignment.characters, alignment.character_start_times_seconds
    ends = alignment.character_end_times_seconds
    assert "".join(chars) == WRITTEN
    # The break: a second between the end of "AB12." and "The".
    gap = starts[WRITTEN.index("The")] - ends[WRITTEN.index("AB12") + 3]
    assert 0.9 < gap < 1.4
    # "AB12" is spelled ("eigh B one two"): one written word over all of its sound, which is
    # longer than "code", spoken as written.
    code = ends[WRITTEN.index("code") + 3] - starts[WRITTEN.index("code")]
    spelled = ends[WRITTEN.index("AB12") + 3] - starts[WRITTEN.index("AB12")]
    assert spelled > 2 * code
    assert len(base64.b64decode(response.audio_base_64)) / 2 / 22050 > 4.0


def test_without_the_flag_markup_is_plain_text(client: ElevenLabs) -> None:
    text = 'Wait <break time="1s"/> here.'
    response = client.text_to_speech.convert_with_timestamps(
        "joe", text=text, output_format="pcm_22050"
    )
    assert response.alignment is not None
    assert "".join(response.alignment.characters) == text


def test_bad_markup_is_elevenlabs_400(client: ElevenLabs) -> None:
    with pytest.raises(ApiError) as raised:
        client.text_to_speech.convert_with_timestamps(
            "joe",
            text='Hold on <break time="4s"/> please.',  # over ElevenLabs' 3 s
            output_format="pcm_22050",
            request_options=SSML_ON,
        )
    assert raised.value.status_code == 400
    assert "at most 3000 ms" in json.dumps(raised.value.body)


def _ws(server_url: str, query: str) -> Any:
    base = server_url.replace("http://", "ws://")
    url = f"{base}/v1/text-to-speech/{EL_VOICE}/stream-input?output_format=pcm_16000&{query}"
    return connect(url, max_size=None)


def _stream(server_url: str, query: str, chunks: list[str]) -> list[dict[str, Any]]:
    """Stream-input as the SDK's chunker feeds it: init, the chunks, then the end of input."""
    replies: list[dict[str, Any]] = []
    with _ws(server_url, query) as ws:
        ws.send(json.dumps({"text": " ", "voice_settings": {"speed": 1.0}}))
        for chunk in chunks:
            ws.send(json.dumps({"text": chunk, "try_trigger_generation": True}))
        ws.send(json.dumps({"text": ""}))
        with pytest.raises(ConnectionClosed):
            while True:
                replies.append(json.loads(ws.recv(timeout=60)))
    return replies


def test_a_streamed_document_with_tags_split_across_messages(server_url: str) -> None:
    # LLM tokens (a word and its space) through the SDK's own chunker, then every chunk cut in
    # two: tags arrive in pieces.
    tokens = re.findall(r"\S+\s*", DOCUMENT)
    halves = [half for c in text_chunker(iter(tokens)) for half in (c[:5], c[5:])]
    chunks = [half for half in halves if half]  # an empty text ends stream-input's input
    assert any("<" in c and ">" not in c for c in chunks)
    replies = _stream(server_url, "enable_ssml_parsing=true", chunks)
    assert not [r for r in replies if "error" in r]
    assert replies[-1].get("isFinal") is True
    chars: list[str] = []
    starts: list[float] = []
    clock = 0.0
    for reply in replies:
        alignment = reply.get("alignment")
        if alignment:
            chars += alignment["chars"]
            starts += [clock + s for s in alignment["charStartTimesMs"]]
        if reply.get("audio"):
            clock += len(base64.b64decode(reply["audio"])) / 2 / 16000 * 1000
    text = "".join(chars)
    # The chunker adds a space after each word; the alignment is that text, tags left out.
    assert text.split() == WRITTEN.split()
    assert "<" not in text and "United" not in text
    # The spelled code and the second of break after it lie between "AB12" and "The".
    assert starts[text.index("The")] - starts[text.index("AB12")] > 1500.0


def test_voice_settings_in_a_later_message_change_the_speed(server_url: str) -> None:
    def seconds(later: dict[str, Any], first: float = 1.0) -> float:
        with _ws(server_url, "seed=7") as ws:
            ws.send(json.dumps({"text": " ", "voice_settings": {"speed": first}}))
            ws.send(json.dumps({"text": "One two three. ", "flush": True}))
            rest = "Four five six seven eight nine ten, and then eleven and twelve."
            ws.send(json.dumps({"text": rest, **later}))
            ws.send(json.dumps({"text": ""}))
            audio = b""
            with pytest.raises(ConnectionClosed):
                while True:
                    reply = json.loads(ws.recv(timeout=60))
                    audio += base64.b64decode(reply.get("audio") or "")
        return len(audio) / 2 / 16000

    slow = seconds({"voice_settings": {"speed": 0.7}})
    same = seconds({})
    assert slow > 1.15 * same  # the rest, most of the audio, spoken at 0.7
    # Later settings without a speed leave the context's own: all of it stays at 0.7.
    kept = seconds({"voice_settings": {"stability": 0.5}}, first=0.7)
    assert kept > slow
