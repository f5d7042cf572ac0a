"""Japanese normalizer rules: every digit sequence rewritten as a Japanese speaker reads it.

The Japanese phonemizer reads kanji numerals with their counters right but mangles digits, so
no digit is left for it (``voxflow.text.normalize.numbers_ja`` writes the numerals). The
rules read a folded view of the text in which full-width ASCII forms are ASCII (``３，０００``
is ``3,000``, ``￥`` is ``¥``): NFKC for these characters, one character for one, so every
offset is an offset into the written text.

Readings (the normalizer joins a rule's pieces without spaces):

* Numbers, with thousands separators and decimals: ``3,000`` -> 三千, ``12,500`` ->
  一万二千五百, ``1.5`` -> 一点五; a counter after them is left as written and read with the
  numeral (``3人`` -> 三人, ``2回`` -> 二回, ``2026年11月29日``, ``午後3時``, ``3時半``).
  Minutes (``分`` after a number, but not ``分の``, a fraction) are written so the phonemizer
  cannot take them for 分 ぶ (a tenth) or 十分 じゅうぶん (enough): ``5分`` -> 五ふん,
  ``10分`` -> じゅっぷん; the numbers whose 分 it reads as ぷん keep the kanji (三分).
* Money: ``¥3,000`` / ``￥1,500`` -> 三千円 / 千五百円 (``3,000円`` is a number before a
  counter), ``$20`` -> 二十ドル, ``$3.50`` -> 三ドル五十セント, ``€`` ユーロ, ``£`` ポンド.
* Dates with a four-digit year: ``2026/11/29``, ``2026-11-29``, ``2026.11.29`` ->
  二千二十六年十一月二十九日 (the phonemizer says 一日 ついたち, 二十日 はつか).
* Times: ``14:30`` -> 十四時三十分, ``9:05`` -> 九時五ふん, ``14:00`` -> 十四時, ``0:15`` ->
  零時十五ふん, seconds ``:SS`` -> 秒.
* Phone numbers (a leading 0, three hyphenated groups, ten or eleven digits): digit by digit
  in katakana, a pause (、) at each hyphen: ``03-1234-5678`` ->
  ゼロサン、イチニーサンヨン、ゴーロクナナハチ.
* ``50%`` -> 五十パーセント; ``-5`` -> マイナス五 (a sign before a digit, not after a Latin
  letter or digit: ``COVID-19`` keeps its hyphen); ``3〜5人`` -> 三から五人 (a wave dash or
  tilde between numbers).
"""

# Japanese text is written with full-width forms and ideographs.
# ruff: noqa: RUF002

from __future__ import annotations

import re

from voxflow.text.normalize.base import Context, Match, Piece, Rule, whole
from voxflow.text.normalize.numbers_ja import kana_digits, kanji_cardinal, spoken_number
from voxflow.text.segment_ja import is_kanji

__all__ = ["JAPANESE_RULES", "fold_width"]

# Full-width ASCII variants (U+FF01..U+FF5E) and the full-width yen sign, as NFKC maps them.
_FOLD = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0xFFE5: ord("¥")}

# Thousands separators only when the groups end the number ("0,0000" is no 0,000 and a 0).
_NUMBER = re.compile(r"(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?")
_PHONE = re.compile(r"0[0-9]{1,4}-[0-9]{1,4}-[0-9]{3,4}(?![0-9-])")
_PHONE_DIGITS = (10, 11)
_DATE = re.compile(r"([0-9]{4})([/.-])([0-9]{1,2})\2([0-9]{1,2})(?![0-9])")
_TIME = re.compile(r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?(?![0-9:])")
_LAST_HOUR = 24
# symbol -> (unit, subunit): a subunit reads two decimals as a second amount ($3.50).
_CURRENCIES: dict[str, tuple[str, str | None]] = {
    "¥": ("円", None),
    "$": ("ドル", "セント"),
    "€": ("ユーロ", "セント"),
    "£": ("ポンド", "ペンス"),
}
_SIGNS = {"-": "マイナス", "−": "マイナス", "+": "プラス"}
_RANGE_DASHES = frozenset("〜~")
_RANGE_KINDS = frozenset({"number", "money", "time", "date"})
_SYMBOLS = {"%": "パーセント"}
# Minutes whose 分 the phonemizer reads as ぶ or ぶん (五分 ごぶ, 十二分 じゅうにぶん) in some
# contexts, by their last digit: written ふん instead, which it reads as it stands.
_FUN_DIGITS = frozenset({2, 5, 7, 8, 9})


def fold_width(text: str) -> str:
    """``text`` with full-width ASCII forms and ``￥`` as ASCII and ``¥``: same length."""
    return text.translate(_FOLD)


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"


def _number_at(text: str, pos: int) -> re.Match[str] | None:
    """The number starting at ``pos``, unless ``pos`` is inside one."""
    if pos > 0 and _is_digit(text[pos - 1]):
        return None
    return _NUMBER.match(text, pos)


def _minutes(written: str) -> tuple[str, str]:
    """The numeral and the counter of ``written`` minutes (see the module docstring)."""
    value = int(written.replace(",", ""))
    if value == 10:
        return "じゅっ", "ぷん"
    numeral = spoken_number(written, before_kanji=True)
    return numeral, ("ふん" if value % 10 in _FUN_DIGITS else "分")


def number_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """A number, and the minutes' 分 after it."""
    del prev
    text = ctx.text
    found = _number_at(text, pos)
    if found is None:
        return None
    written, end = found.group(), found.end()
    if text.startswith("分", end) and not text.startswith("分の", end) and "." not in written:
        numeral, counter = _minutes(written)
        pieces = (Piece(numeral, pos, end), Piece(counter, end, end + 1))
        return Match(pos, end + 1, pieces, "number")
    before_kanji = end < len(text) and is_kanji(text[end])
    return whole(spoken_number(written, before_kanji), pos, end, "number")


def phone_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """A phone number, digit by digit."""
    del prev
    text = ctx.text
    if pos > 0 and _is_digit(text[pos - 1]):
        return None
    found = _PHONE.match(text, pos)
    if found is None or sum(map(_is_digit, found.group())) not in _PHONE_DIGITS:
        return None
    pieces: list[Piece] = []
    start = pos
    for group in found.group().split("-"):
        if pieces:
            pieces.append(Piece("、", start - 1, start))
        pieces.append(Piece(kana_digits(group), start, start + len(group)))
        start += len(group) + 1
    return Match(pos, found.end(), tuple(pieces), "phone")


def date_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """A year, month and day with slashes, hyphens or dots between them."""
    del prev
    text = ctx.text
    if pos > 0 and _is_digit(text[pos - 1]):
        return None
    found = _DATE.match(text, pos)
    if found is None:
        return None
    month, day = int(found.group(3)), int(found.group(4))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    (year_start, year_end), first, second = found.span(1), found.start(2), found.start(4) - 1
    pieces = (
        Piece(kanji_cardinal(int(found.group(1))), year_start, year_end),
        Piece("年", first, first + 1),
        Piece(kanji_cardinal(month), *found.span(3)),
        Piece("月", second, second + 1),
        Piece(kanji_cardinal(day) + "日", *found.span(4)),
    )
    return Match(pos, found.end(), pieces, "date")


def time_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Hours and minutes (and seconds) with colons."""
    del prev
    text = ctx.text
    if pos > 0 and (_is_digit(text[pos - 1]) or text[pos - 1] == ":"):
        return None
    found = _TIME.match(text, pos)
    if found is None:
        return None
    hour, minute = int(found.group(1)), int(found.group(2))
    second = None if found.group(3) is None else int(found.group(3))
    if hour > _LAST_HOUR or minute > 59 or (second is not None and second > 59):
        return None
    colon = found.end(1)
    hours = "零" if hour == 0 else spoken_number(found.group(1), before_kanji=True)
    pieces = [Piece(hours, *found.span(1))]
    if minute == 0 and second is None:
        pieces.append(Piece("時", colon, found.end()))  # 14:00 is 十四時
        return Match(pos, found.end(), tuple(pieces), "time")
    pieces.append(Piece("時", colon, colon + 1))
    if minute:
        numeral, counter = _minutes(found.group(2))
        pieces.append(Piece(numeral + counter, *found.span(2)))
    if second is not None:
        seconds = spoken_number(found.group(3), before_kanji=True) + "秒"
        pieces.append(Piece(seconds, found.end(2), found.end()))
    return Match(pos, found.end(), tuple(pieces), "time")


def money_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """An amount after a currency sign, read before its unit."""
    del prev
    text = ctx.text
    currency = _CURRENCIES.get(text[pos])
    if currency is None:
        return None
    found = _number_at(text, pos + 1)
    if found is None:
        return None
    unit, subunit = currency
    written = found.group()
    main, _, cents = written.replace(",", "").partition(".")
    if subunit is not None and len(cents) == 2:
        parts = []
        if int(main or "0") or not int(cents):
            parts.append(spoken_number(main or "0") + unit)
        if int(cents):
            parts.append(spoken_number(str(int(cents))) + subunit)
        return whole("".join(parts), pos, found.end(), "money")
    numeral = spoken_number(written, before_kanji=is_kanji(unit[0]))
    return whole(numeral + unit, pos, found.end(), "money")


def sign_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """A minus or plus sign before a number."""
    del prev
    text = ctx.text
    spoken = _SIGNS.get(text[pos])
    if spoken is None or not _is_digit(text[pos + 1 : pos + 2]):
        return None
    if pos > 0 and text[pos - 1].isascii() and (text[pos - 1].isalnum() or text[pos - 1] in ".,"):
        return None  # a hyphen inside a word or between numbers: COVID-19, 3-5
    return whole(spoken, pos, pos + 1, "sign")


def range_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """A wave dash or tilde between two numbers: から."""
    text = ctx.text
    if text[pos] not in _RANGE_DASHES or prev is None or prev.end != pos:
        return None
    if prev.kind not in _RANGE_KINDS:
        return None
    after = text[pos + 1 : pos + 2]
    if not (_is_digit(after) or after in _CURRENCIES):
        return None
    return whole("から", pos, pos + 1, "range")


def symbol_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Symbols read as words: ``%`` パーセント."""
    del prev
    spoken = _SYMBOLS.get(ctx.text[pos])
    return None if spoken is None else whole(spoken, pos, pos + 1, "symbol")


JAPANESE_RULES: tuple[Rule, ...] = (
    phone_rule,
    date_rule,
    time_rule,
    money_rule,
    sign_rule,
    number_rule,
    range_rule,
    symbol_rule,
)
"""The rules in priority order: specific shapes (a phone number, a date, a time) before the
plain number that each starts with."""
