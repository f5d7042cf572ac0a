"""Locales as clients and voices write them, and which requests a voice may speak."""

from __future__ import annotations

import pytest

from voxflow.text.language import (
    TextLanguage,
    locale_matches,
    parse_locale,
    text_language_of,
    text_rules_of,
)


@pytest.mark.parametrize(
    ("locale", "parsed"),
    [
        ("ja", ("ja", None)),
        ("JA", ("ja", None)),
        ("en_US", ("en", "US")),
        ("en-gb", ("en", "GB")),
        (" ja-JP ", ("ja", "JP")),
        ("es-419", ("es", "419")),
    ],
)
def test_locales_are_read_however_they_are_written(
    locale: str, parsed: tuple[str, str | None]
) -> None:
    assert parse_locale(locale) == parsed


@pytest.mark.parametrize("locale", ["", "english", "e", "en_", "en-USA", "ja JP", "日本語"])
def test_what_is_no_language_code_is_refused(locale: str) -> None:
    with pytest.raises(ValueError, match="not a language code"):
        parse_locale(locale)


def test_a_request_matches_by_language_and_by_region_when_both_name_one() -> None:
    assert locale_matches("ja", "ja_JP") and locale_matches("ja-JP", "ja_JP")
    assert locale_matches("en", "en_GB") and locale_matches("en-GB", "en_GB")
    assert not locale_matches("en-US", "en_GB")
    assert not locale_matches("ja", "en_US")
    assert locale_matches("en-US", "en")  # a voice that names no region speaks every one
    # A voice whose locale is no language code speaks nothing a request can name; a request
    # that is no language code is an error.
    assert not locale_matches("en", "")
    with pytest.raises(ValueError, match="not a language code"):
        locale_matches("english", "en_US")


def test_the_text_rules_of_a_voice_are_its_languages_or_english() -> None:
    assert text_language_of("ja_JP") is text_rules_of("ja_JP") is TextLanguage.JAPANESE
    assert text_language_of("en_GB") is TextLanguage.ENGLISH
    with pytest.raises(ValueError, match="does not speak 'de_DE'"):
        text_language_of("de_DE")
    # A German Piper voice, or one with no locale, is read by the English rules as it always was.
    assert text_rules_of("de_DE") is text_rules_of("") is TextLanguage.ENGLISH
