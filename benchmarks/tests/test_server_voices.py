"""The language of the voice under test, as a real server lists it."""

from __future__ import annotations

from voxflow import TextLanguage
from voxflow_bench.server_voices import http_base, voice_language


def test_http_base_of_ws_and_http_urls() -> None:
    assert http_base("ws://127.0.0.1:8000/v1/stream") == "http://127.0.0.1:8000"
    assert http_base("wss://tts.example/v1/stream") == "https://tts.example"
    assert http_base("http://127.0.0.1:8000") == "http://127.0.0.1:8000"


def test_the_listed_voice_and_the_default_are_english(server_url: str) -> None:
    assert voice_language(server_url, "joe") is TextLanguage.ENGLISH
    assert voice_language(server_url, None) is TextLanguage.ENGLISH
    # A name the listing lacks (an alias, a blend of packs it lacks) is read as English.
    assert voice_language(server_url, "alloy") is TextLanguage.ENGLISH
