"""Normalizer rules for dates and telephone numbers (clock times: ``normalize_times``).

Decisions for ambiguous input (US English):

* "11/22/2026" is month/day/year; when the first field cannot be a month (> 12) and the second
  can, it is day/month/year. Two-digit years are 20xx below 50 and 19xx otherwise. A slashed
  pair without a year is a date only after "on", "by", "due", "until", ... ("due 11/22");
  otherwise it is a fraction or a score ("1/2", "4.5/5").
* Dates read "November twenty-second, twenty twenty-six"; a day written before the month
  ("22 November 2026") reads "the twenty-second of November, twenty twenty-six".
* The letter A, spelled out, is written "eigh" (``spell_letter``): espeak-ng reads a lone "a" or
  "A" before another word as the article ("uh"), while "eigh" always gives the letter name. The
  same respelling is used wherever the letter A is spelled out (initialisms, a.m.).
* Phone numbers are read digit by digit, with a comma (a short pause) between the groups:
  "(555) 123-4567" -> "five five five, one two three, four five six seven"; a leading "+" is
  "plus". Only separated groups of the usual North American shapes ("555-123-4567",
  "(555) 123-4567", "1-800-555-1234", and the local "555-1234") or "+" with a country code
  count, so plain long numbers stay numbers. "200-1000" (both ends round) and "100-1000" (no
  exchange code starts with 0 or 1) are ranges, not local numbers.
"""

from __future__ import annotations

import re

from voxflow.text.normalize.base import (
    Context,
    Match,
    Piece,
    ends_sentence,
    is_left_edge,
    is_right_edge,
    prev_word,
    whole,
)
from voxflow.text.normalize.numbers import digits, ordinal, year

__all__ = ["MONTHS", "date_rule", "phone_rule", "spell_letter", "spoken_date"]

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH_ABBREVIATIONS = {name[:3]: i + 1 for i, name in enumerate(MONTHS)} | {"Sept": 9}
_MONTH_NAMES = {name: i + 1 for i, name in enumerate(MONTHS)}

_MONTH_WORD = (
    r"(?P<month>"
    + "|".join(MONTHS)
    + "|(?:"
    + "|".join(sorted(_MONTH_ABBREVIATIONS, key=len, reverse=True))
    + r")\.?)"
)
_DAY = r"(?P<day>(?P<dnum>\d{1,2})(?:st|nd|rd|th)?)"
_YEAR_PART = r"(?P<comma>,?)[ \u00a0](?P<year>\d{4})"
_MONTH_FIRST = re.compile(_MONTH_WORD + r"[ \u00a0]" + _DAY + r"(?:" + _YEAR_PART + r")?")
_MONTH_YEAR = re.compile(_MONTH_WORD + r"[ \u00a0](?P<year>\d{4})")
_DAY_FIRST = re.compile(
    _DAY + r"[ \u00a0](?:of[ \u00a0])?" + _MONTH_WORD + r"(?:" + _YEAR_PART + r")?"
)
_MONTH_ALONE = re.compile(
    "(" + "|".join(sorted(_MONTH_ABBREVIATIONS, key=len, reverse=True)) + r")\.(?![\w.])"
)
_MONTH_CUES = frozenset(
    {
        "in", "since", "by", "until", "till", "from", "through", "of", "early", "late", "mid",
        "before", "after",
    }
)  # fmt: skip
_MONTH_DAY = re.compile(r"(\d{1,2})/(\d{1,2})")
_ON = frozenset({"on", "by", "until", "till", "since", "before", "after", "due", "from"})
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_SLASH_DATE = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})")

_US_PHONE = re.compile(
    r"(?:(?P<country>1)(?P<sep0>[-. ]))?"
    r"(?:\((?P<area1>\d{3})\)[ \u00a0]?|(?P<area2>\d{3})(?P<sep1>[-.]))"
    r"(?P<exchange>\d{3})[-.](?P<line>\d{4})"
)
# Exchange codes never start with 0 or 1 ("100-1000" is a range).
_LOCAL_PHONE = re.compile(r"(?P<exchange>[2-9]\d{2})-(?P<line>\d{4})")
_INTERNATIONAL = re.compile(r"\+(\d{1,3})((?:[ \u00a0.-]?\(?\d{1,4}\)?){2,5})")
_DIGIT_GROUP = re.compile(r"\d+")

# espeak-ng reads a lone "A" before another word as the article; "eigh" is always the letter.
_LETTER_A = "eigh"


def spell_letter(letter: str) -> str:
    """One letter as spoken on its own ("a" -> "eigh", anything else unchanged)."""
    return _LETTER_A if letter in "aA" else letter


def spoken_date(month: int, day: int | None, year_value: int | None) -> str:
    """ "March fifth, twenty twenty-four": a date read with whichever of its parts it has."""
    spoken = MONTHS[month - 1]
    if day is not None:
        spoken += " " + ordinal(day)
    if year_value is not None:
        spoken += ("," if day is not None else "") + " " + year(year_value)
    return spoken


def _valid(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31


def _month_number(name: str) -> int:
    name = name.rstrip(".")
    return _MONTH_NAMES.get(name) or _MONTH_ABBREVIATIONS[name]


def _named_month_date(text: str, pos: int) -> Match | None:
    """ "Nov. 22, 2026", "November 22nd", "22 November 2026", "November 2026"."""
    found = _MONTH_FIRST.match(text, pos)
    if found is not None and is_right_edge(text, found.end()):
        day = int(found.group("dnum"))
        if 1 <= day <= 31:
            month = _month_number(found.group("month"))
            pieces = [
                Piece(MONTHS[month - 1], found.start("month"), found.end("month")),
                Piece(ordinal(day), found.start("day"), found.end("day")),
            ]
            if found.group("year") is not None:
                pieces += _year_pieces(found)
            return Match(pos, found.end(), tuple(pieces), "date")
    found = _MONTH_ALONE.match(text, pos)
    if (
        found is not None
        and prev_word(text, pos) in _MONTH_CUES
        and is_right_edge(text, found.end())
    ):
        # "in Jan." is the month; elsewhere "Jan." may be a name, so it is left alone.
        pieces = [Piece(MONTHS[_month_number(found.group(1)) - 1], pos, found.end())]
        if ends_sentence(text, found.end()):
            pieces.append(Piece(".", found.end() - 1, found.end(), attach=True))
        return Match(pos, found.end(), tuple(pieces), "month")
    found = _MONTH_YEAR.match(text, pos)
    if found is not None and is_right_edge(text, found.end()):
        month = _month_number(found.group("month"))
        pieces = [
            Piece(MONTHS[month - 1], found.start("month"), found.end("month")),
            Piece(year(int(found.group("year"))), found.start("year"), found.end("year")),
        ]
        return Match(pos, found.end(), tuple(pieces), "date")
    return None


def _year_pieces(found: re.Match[str]) -> list[Piece]:
    spoken_year = year(int(found.group("year")))
    year_piece = Piece(spoken_year, found.start("year"), found.end("year"))
    if found.group("comma"):
        return [Piece(",", found.start("comma"), found.end("comma"), attach=True), year_piece]
    # The comma is part of how the date is spoken (a short pause) even where it was not written.
    return [Piece(",", found.start("year"), found.start("year"), attach=True), year_piece]


def _day_first_date(text: str, pos: int) -> Match | None:
    found = _DAY_FIRST.match(text, pos)
    if found is None or not is_right_edge(text, found.end()):
        return None
    day = int(found.group("dnum"))
    if not 1 <= day <= 31:
        return None
    month = _month_number(found.group("month"))
    article = "" if prev_word(text, pos) == "the" else "the "
    pieces = [
        Piece(f"{article}{ordinal(day)}", pos, found.end("day")),
        Piece(f"of {MONTHS[month - 1]}", found.start("month"), found.end("month")),
    ]
    if found.group("year") is not None:
        pieces += _year_pieces(found)
    return Match(pos, found.end(), tuple(pieces), "date")


def _numeric_date(text: str, pos: int) -> Match | None:
    found = _ISO_DATE.match(text, pos)
    if found is not None and is_right_edge(text, found.end()):
        year_value, month, day = (int(g) for g in found.groups())
        if _valid(month, day):
            return whole(spoken_date(month, day, year_value), pos, found.end(), "date")
    found = _SLASH_DATE.match(text, pos)
    if found is not None and is_right_edge(text, found.end()):
        first, second = int(found.group(1)), int(found.group(2))
        year_text = found.group(3)
        year_value = int(year_text)
        if len(year_text) == 2:
            year_value += 2000 if year_value < 50 else 1900
        month, day = (second, first) if first > 12 and second <= 12 else (first, second)
        if _valid(month, day):
            return whole(spoken_date(month, day, year_value), pos, found.end(), "date")
    found = _MONTH_DAY.match(text, pos)
    if found is not None and is_right_edge(text, found.end()) and prev_word(text, pos) in _ON:
        # Without a year "3/4" is a fraction, but "on 11/22" or "by 3/4" is a date.
        month, day = int(found.group(1)), int(found.group(2))
        if _valid(month, day) and not text.startswith("/", found.end()):
            return whole(spoken_date(month, day, None), pos, found.end(), "date")
    return None


def date_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Dates written with digits or with a month name."""
    del prev
    text = ctx.text
    if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] == "_"):
        return None
    char = text[pos]
    if char.isdigit():
        return _numeric_date(text, pos) or _day_first_date(text, pos)
    if char.isupper():
        return _named_month_date(text, pos)
    return None


def _grouped(groups: list[tuple[str, int, int]], prefix: str = "") -> tuple[Piece, ...]:
    pieces: list[Piece] = []
    for index, (group, start, end) in enumerate(groups):
        spoken = digits(group)
        if index == 0 and prefix:
            spoken = f"{prefix} {spoken}"
        if index < len(groups) - 1:
            spoken += ","
        pieces.append(Piece(spoken, start, end))
    return tuple(pieces)


def phone_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Telephone numbers, read digit by digit in their groups."""
    del prev
    text = ctx.text
    if not is_left_edge(text, pos) and not (pos > 0 and text[pos - 1] in ":;,"):
        return None
    if text[pos] == "+":
        found = _INTERNATIONAL.match(text, pos)
        if found is None or not is_right_edge(text, found.end()):
            return None
        groups = [(found.group(1), pos, found.end(1))]
        for group in _DIGIT_GROUP.finditer(text, found.start(2), found.end(2)):
            groups.append((group.group(), group.start(), group.end()))
        total = sum(len(g) for g, _, _ in groups)
        if not 8 <= total <= 15:
            return None
        return Match(pos, found.end(), _grouped(groups, "plus"), "phone")
    found = _US_PHONE.match(text, pos)
    if found is not None and is_right_edge(text, found.end()):
        if (
            found.group("sep0")
            and found.group("sep1")
            and found.group("sep0") != found.group("sep1")
        ):
            return None
        groups = []
        if found.group("country"):
            groups.append(("1", found.start("country"), found.end("country")))
        area = "area1" if found.group("area1") else "area2"
        area_start = found.start(area) - (1 if area == "area1" else 0)
        area_end = found.end(area) + (1 if area == "area1" else 0)
        groups.append((found.group(area), area_start, area_end))
        groups.append((found.group("exchange"), found.start("exchange"), found.end("exchange")))
        groups.append((found.group("line"), found.start("line"), found.end("line")))
        return Match(pos, found.end(), _grouped(groups), "phone")
    found = _LOCAL_PHONE.match(text, pos)
    round_range = found is not None and all(int(g) % 10 == 0 for g in found.groups())
    if found is not None and is_right_edge(text, found.end()) and not round_range:
        groups = [
            (found.group("exchange"), found.start("exchange"), found.end("exchange")),
            (found.group("line"), found.start("line"), found.end("line")),
        ]
        return Match(pos, found.end(), _grouped(groups), "phone")
    return None
