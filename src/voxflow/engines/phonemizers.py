"""Which phonemizer reads each language: one interface, one table entry a language.

A voice's locale (``en_US``, ``en_GB``, ``ja_JP``) picks its phonemizer: espeak-ng (through
piper-tts) for English, misaki's Japanese G2P on pyopenjtalk for Japanese. Both give the same
``Phonemized`` (phonemes, the written words and each word's phoneme range), so the engines do
not know which one read their text. A third language is a ``Reading`` here and a phonemizer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from voxflow.engines.phonemize import Phonemized, Phonemizer
from voxflow.engines.phonemize_ja import JapanesePhonemizer, japanese_available
from voxflow.text.language import TextLanguage, parse_locale, text_language_of

__all__ = ["Reading", "TextPhonemizer", "phonemizer_for", "reading_of"]


class TextPhonemizer(Protocol):
    """Text in, phonemes and the words they came from out; thread-safe."""

    def phonemize(self, text: str) -> Phonemized: ...


@dataclass(frozen=True)
class Reading:
    """How one language is read: its phonemizer, whether that phonemizer is installed, and
    how to install it."""

    language: TextLanguage
    make: Callable[[str], TextPhonemizer]  # from the voice's locale
    available: Callable[[], bool]
    install: str  # what installs it, for the error a request gets without it


def _always() -> bool:
    return True


# espeak-ng's voices for English locales (piper's espeak-ng names British English "en").
_ESPEAK_VOICES = {"US": "en-us", "GB": "en"}


def _espeak(locale: str) -> TextPhonemizer:
    _, region = parse_locale(locale)
    return Phonemizer(_ESPEAK_VOICES.get(region or "US", "en-us"))


def _japanese(_locale: str) -> TextPhonemizer:
    return JapanesePhonemizer()


_READINGS = {
    TextLanguage.ENGLISH: Reading(TextLanguage.ENGLISH, _espeak, _always, "pip install voxflow"),
    TextLanguage.JAPANESE: Reading(
        TextLanguage.JAPANESE, _japanese, japanese_available, "make kokoro-voices"
    ),
}


def reading_of(language: TextLanguage) -> Reading:
    """How ``language`` is read."""
    return _READINGS[language]


def phonemizer_for(locale: str) -> TextPhonemizer:
    """The phonemizer of a voice's locale; ``ValueError`` for a language voxflow does not read,
    ``ModuleNotFoundError`` when its phonemizer is not installed."""
    reading = _READINGS[text_language_of(locale)]
    if not reading.available():
        raise ModuleNotFoundError(
            f"the {reading.language.name.title()} phonemizer is not installed: {reading.install}"
        )
    return reading.make(locale)
