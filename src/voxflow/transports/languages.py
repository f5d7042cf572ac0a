"""The languages a server's voices speak, as the protocols' listings show them (no I/O).

A voice names its locale (``VoiceInfo.language``: ``en_US``, ``ja_JP``); a listing shows the
language (``ja``) with its English name, as ElevenLabs' models list theirs
(``{"language_id": "ja", "name": "Japanese"}``), and the locale in BCP 47 form (``ja-JP``), as
ElevenLabs' and Cartesia's voices carry theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from voxflow.engines.base import VoiceInfo
from voxflow.text.language import parse_locale

__all__ = ["LANGUAGE_NAMES", "SpokenLanguage", "bcp47", "spoken_languages"]

# English names of the languages voxflow's voices speak (ISO 639-1); another language a voice
# names is listed by its code.
LANGUAGE_NAMES: Mapping[str, str] = MappingProxyType({"en": "English", "ja": "Japanese"})


@dataclass(frozen=True)
class SpokenLanguage:
    code: str  # ISO 639-1: "ja"
    name: str  # in English: "Japanese"

    def listed(self) -> dict[str, str]:
        """As a model list shows it: ``{"language_id": "ja", "name": "Japanese"}``."""
        return {"language_id": self.code, "name": self.name}


def spoken_languages(voices: Iterable[VoiceInfo]) -> tuple[SpokenLanguage, ...]:
    """The languages of ``voices``, each once, in the order of its first voice there; a voice
    whose locale is no language code is left out (it speaks nothing a client could ask for)."""
    seen: dict[str, SpokenLanguage] = {}
    for voice in voices:
        try:
            code, _ = parse_locale(voice.language)
        except ValueError:
            continue
        seen.setdefault(code, SpokenLanguage(code, LANGUAGE_NAMES.get(code, code)))
    return tuple(seen.values())


def bcp47(locale: str) -> str:
    """A voice's locale as BCP 47 writes it (``ja_JP`` -> ``ja-JP``); one that is no language
    code as it is."""
    try:
        language, region = parse_locale(locale)
    except ValueError:
        return locale
    return language if region is None else f"{language}-{region}"
