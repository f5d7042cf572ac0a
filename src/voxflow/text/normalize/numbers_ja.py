"""Japanese number readings, written for the Japanese phonemizer: kanji numerals and kana.

The phonemizer (pyopenjtalk) reads kanji numerals well, with their counters' sound
changes (三本 さんぼん, 六百 ろっぴゃく, 一日 ついたち, 二十日 はつか), but mangles digits,
so every number is rewritten here. Its few misreadings of bare numerals are written in
katakana instead: 九十九 alone is つくも (a name) and 八百 alone やお (as in 八百屋);
``0`` alone is ゼロ (〇 alone is not read at all). Pure string functions with no offsets;
``voxflow.text.normalize.rules_ja`` decides which reading applies.

Conventions: myriad grouping (万 10^4, 億 10^8, 兆 10^12); 十, 百 and 千 without 一
(千五百, not 一千五百), 一 before 万 and up (一万); a decimal part digit by digit after 点
(一点〇五); digit strings that are identifiers (a leading zero, past the 兆) in katakana
digit names, as a Japanese speaker reads a phone number: ゼロ イチ ニー サン ヨン ゴー
ロク ナナ ハチ キュー (the long ニー and ゴー keep one-mora digits distinct in a run).
"""

# Japanese numerals are written with ideographs that look like Latin letters to ruff.
# ruff: noqa: RUF002

from __future__ import annotations

__all__ = ["MAX_KANJI", "kana_digits", "kanji_cardinal", "kanji_digits", "spoken_number"]

MAX_KANJI = 10**16 - 1
"""The largest number read as a kanji numeral (九千九百…兆…); longer digit strings are read digit
by digit."""

_KANJI_DIGITS = "〇一二三四五六七八九"
_KANA_DIGITS = ("ゼロ", "イチ", "ニー", "サン", "ヨン", "ゴー", "ロク", "ナナ", "ハチ", "キュー")
_GROUPS = ((10**12, "兆"), (10**8, "億"), (10**4, "万"))
_PLACES = ((1000, "千"), (100, "百"), (10, "十"))
# Bare numerals the phonemizer misreads, as katakana (see the module docstring). Before a
# kanji (a counter: 九十九人, 八百円) the kanji numeral is read right, and keeps the counter's
# own reading (九十九日 きゅうじゅうくにち).
_MISREAD = {99: "キュージューキュー", 800: "ハッピャク"}


def _below_myriad(n: int) -> str:
    out = ""
    for value, name in _PLACES:
        count, n = divmod(n, value)
        if count:
            out += ("" if count == 1 else _KANJI_DIGITS[count]) + name
    return out + (_KANJI_DIGITS[n] if n else "")


def kanji_cardinal(n: int) -> str:
    """``12500`` -> 一万二千五百, ``3000`` -> 三千, ``0`` -> 〇; ``0 <= n <= MAX_KANJI``."""
    if not 0 <= n <= MAX_KANJI:
        raise ValueError(f"{n} is outside 0..{MAX_KANJI}")
    if n == 0:
        return _KANJI_DIGITS[0]
    out = ""
    for value, name in _GROUPS:
        count, n = divmod(n, value)
        if count:
            out += _below_myriad(count) + name
    return out + (_below_myriad(n) if n else "")


def kanji_digits(text: str) -> str:
    """Each ASCII digit as a kanji digit: ``"05"`` -> 〇五 (a decimal part); others skipped."""
    return "".join(_KANJI_DIGITS[int(char)] for char in text if "0" <= char <= "9")


def kana_digits(text: str) -> str:
    """Each ASCII digit's katakana name: ``"0312"`` -> ゼロサンイチニー; others skipped."""
    return "".join(_KANA_DIGITS[int(char)] for char in text if "0" <= char <= "9")


def spoken_number(text: str, before_kanji: bool = False) -> str:
    """A written number (ASCII digits, optional thousands commas and decimal part: ``3,000``,
    ``1.5``, ``007``) as the phonemizer should read it. ``before_kanji``: a kanji (a counter)
    follows, which changes how some numerals are read.

    An integer part of three digits or more with a leading zero, or past ``MAX_KANJI``, is an
    identifier, read digit by digit in katakana ("007"); two digits with a leading zero are a
    zero-padded number ("09時05分"). A bare ``0`` is ゼロ, one with a decimal part 〇 (〇点五
    れいてんご).
    """
    whole, point, fraction = text.replace(",", "").partition(".")
    if whole and ((len(whole) > 2 and whole[0] == "0") or int(whole) > MAX_KANJI):
        spoken = kana_digits(whole)
    elif not point and whole and int(whole) == 0:
        spoken = _KANA_DIGITS[0]
    else:
        value = int(whole) if whole else 0
        if not point and not before_kanji and value in _MISREAD:
            return _MISREAD[value]
        spoken = kanji_cardinal(value)
    if point:
        spoken += "点" + kanji_digits(fraction)
    return spoken
