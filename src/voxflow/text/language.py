"""The languages voxflow speaks, and how a requested language is matched to a voice's.

A voice carries a locale (``VoiceInfo.language``: ``en_US``, ``en_GB``, ``ja_JP``); the text
stages (boundaries, normalisation, phrase costs) depend only on its language, its primary
subtag. Clients name languages every way the protocols allow (ElevenLabs ``ja``, Cartesia
``ja``, BCP 47 ``ja-JP``, Wyoming ``ja_JP``): a request matches a voice when their primary
subtags agree, and also their regions when both name one.
"""

from __future__ import annotations

import re
from enum import StrEnum

__all__ = ["TextLanguage", "locale_matches", "parse_locale", "text_language_of", "text_rules_of"]

_LOCALE = re.compile(r"(?P<language>[A-Za-z]{2,3})(?:[-_](?P<region>[A-Za-z]{2}|[0-9]{3}))?")


class TextLanguage(StrEnum):
    """A language whose text voxflow can segment, normalise and phonemize."""

    ENGLISH = "en"
    JAPANESE = "ja"


def parse_locale(locale: str) -> tuple[str, str | None]:
    """``(language, region)`` of ``en_US``, ``en-us``, ``ja`` (lower and upper case);
    ``ValueError`` when ``locale`` is not one."""
    match = _LOCALE.fullmatch(locale.strip())
    if match is None:
        raise ValueError(f"{locale!r} is not a language code (write ja, en, en-US or en_GB)")
    region = match["region"]
    return match["language"].lower(), region.upper() if region is not None else None


def text_language_of(locale: str) -> TextLanguage:
    """The text language of a voice's locale (``en_GB`` -> English); ``ValueError`` for a
    language voxflow does not speak."""
    language, _ = parse_locale(locale)
    try:
        return TextLanguage(language)
    except ValueError:
        spoken = ", ".join(member.value for member in TextLanguage)
        raise ValueError(f"voxflow does not speak {locale!r} (it speaks {spoken})") from None


def text_rules_of(locale: str) -> TextLanguage:
    """The language whose text rules (boundaries, spoken costs, normalisation) read the text of
    a voice of ``locale``: its own, or English for a locale voxflow has no rules for (a German
    Piper voice is read as voxflow always read it)."""
    try:
        return text_language_of(locale)
    except ValueError:
        return TextLanguage.ENGLISH


def locale_matches(requested: str, voice_locale: str) -> bool:
    """Whether a request for ``requested`` may be spoken by a voice of ``voice_locale``:
    the same language, and the same region when both name one (``en`` and ``en-GB`` match
    ``en_GB``; ``en-US`` does not). A voice whose locale is no language code speaks nothing a
    request can name; ``ValueError`` when ``requested`` is not a language code."""
    language, region = parse_locale(requested)
    try:
        voice_language, voice_region = parse_locale(voice_locale)
    except ValueError:
        return False
    if language != voice_language:
        return False
    return region is None or voice_region is None or region == voice_region
