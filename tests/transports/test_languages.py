"""The languages of the server's voices as the listings show them (``transports.languages``)."""

from __future__ import annotations

from tests.support.language_voices import ALPHA, HEART, voices
from voxflow.transports.elevenlabs.http import elevenlabs_voice_fields
from voxflow.transports.languages import SpokenLanguage, bcp47, spoken_languages


def test_each_language_once_in_the_order_of_its_first_voice() -> None:
    assert spoken_languages(voices()) == (
        SpokenLanguage("en", "English"),
        SpokenLanguage("ja", "Japanese"),
    )
    assert spoken_languages((ALPHA, HEART)) == (
        SpokenLanguage("ja", "Japanese"),
        SpokenLanguage("en", "English"),
    )
    assert spoken_languages(()) == ()


def test_locales_in_bcp47_form() -> None:
    assert bcp47("ja_JP") == "ja-JP"
    assert bcp47("en-gb") == "en-GB"
    assert bcp47("ja") == "ja"
    assert bcp47("") == ""  # no language code: as it is


def test_elevenlabs_voices_carry_their_language() -> None:
    fields = elevenlabs_voice_fields(ALPHA, default=False)
    assert fields["labels"] == {"language": "ja", "locale": "ja-JP", "engine": "kokoro"}
    assert fields["verified_languages"] == [
        {
            "language": "ja",
            "model_id": "eleven_multilingual_v2",
            "accent": None,
            "locale": "ja-JP",
            "preview_url": None,
        }
    ]
