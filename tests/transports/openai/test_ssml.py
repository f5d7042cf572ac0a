"""The OpenAI endpoint's ``text_format`` extension through the real ``openai`` SDK."""

from __future__ import annotations

import openai
import pytest

PLAIN = "Your table is ready. Please come in."
SSML = (
    '<speak>Your table is ready.<break time="1500ms"/> Please '
    '<prosody rate="slow">come in</prosody>.</speak>'
)


def _seconds(client: openai.OpenAI, text: str, **extra: object) -> float:
    audio = client.audio.speech.create(
        model="tts-1", voice="alloy", input=text, response_format="pcm", extra_body=extra
    ).content
    return len(audio) / 2 / 24000


def test_ssml_through_the_extension_field(client: openai.OpenAI) -> None:
    plain = _seconds(client, PLAIN)
    marked = _seconds(client, SSML, text_format="ssml")
    # A second and a half of break, and "come in" slower: longer by more than the break.
    assert marked - plain > 1.3
    # Without the field the markup is text: its tags are read, and no break is made.
    assert _seconds(client, SSML) != pytest.approx(marked, abs=0.2)


def test_bad_ssml_is_openais_invalid_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        _seconds(client, "<speak>Hello", text_format="ssml")
    error = raised.value.body
    assert isinstance(error, dict)
    assert error["param"] == "input" and "<speak> is never closed" in error["message"]
    with pytest.raises(openai.BadRequestError) as raised:
        _seconds(client, PLAIN, text_format="markdown")
    assert isinstance(raised.value.body, dict) and raised.value.body["param"] == "text_format"
