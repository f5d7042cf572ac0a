"""Cartesia's ``pronunciation_dict_id`` through the official SDK: one of the server's
pronunciation dictionaries (made through ElevenLabs' API, the server's one store) speaks the
request's words; an unknown one is refused in Cartesia's shape."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cartesia import APIStatusError, Cartesia

VOICE: Any = {"mode": "id", "id": "a0e99841-438c-4a64-b679-ae501e7d6091"}
PCM: Any = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000}
TEXT = "The UN met today."


@pytest.fixture
def server(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]], tmp_path: Path
) -> Iterator[str]:
    with server_factory(dictionaries_dir=tmp_path, workers=2) as url:
        yield url


def _speak(sdk: Cartesia, **extra: Any) -> bytes:
    return sdk.tts.generate(
        model_id="sonic-3", transcript=TEXT, voice=VOICE, output_format=PCM, **extra
    ).read()


def test_a_dictionary_speaks_the_requests_words(server: str) -> None:
    rules = [{"type": "alias", "string_to_replace": "UN", "alias": "United Nations"}]
    with httpx.Client(timeout=30) as http:
        made = http.post(
            f"{server}/v1/pronunciation-dictionaries/add-from-rules",
            json={"name": "Acronyms", "rules": rules},
        )
    assert made.status_code == 200, made.text
    with Cartesia(api_key="sk_test", base_url=server, max_retries=0) as sdk:
        plain = _speak(sdk)
        spoken = _speak(sdk, pronunciation_dict_id=made.json()["id"])
        # "United Nations" is longer to say than "UN": a second of 16-bit samples at 16 kHz is
        # 32,000 bytes; the alias adds well over a tenth of one.
        assert len(spoken) > len(plain) + 3200
        with pytest.raises(APIStatusError) as refused:
            _speak(sdk, pronunciation_dict_id="nope")
    assert refused.value.status_code == 404
    assert "nope" in refused.value.response.text
