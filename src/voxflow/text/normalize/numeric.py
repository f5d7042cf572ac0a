"""Normalizer rules for numeric expressions: percentages, ordinals, decades, fractions,
versions, plain numbers and the dash of a numeric range; money (``normalize_money``), units
(``normalize_units``) and years (``normalize_years``) are read by their own modules, called from
``numeric_rule`` here.

Decisions for ambiguous input (US English):

* A number with a leading zero ("007") or past the trillions is read digit by digit.
* "-" directly between two numbers is a range ("5-10" -> "five to ten"), like an en dash with or
  without spaces; a spaced hyphen is left alone (it may be a subtraction or a pause).
* "-" or a minus sign (U+2212) starting a token before a digit is a minus sign; "+" there is "plus".
"""

from __future__ import annotations

import re

from voxflow.text.normalize.base import (
    Context,
    Match,
    Piece,
    is_left_edge,
    is_right_edge,
    prev_word,
    whole,
)
from voxflow.text.normalize.money import CURRENCIES, NUMBER, SCALE_SUFFIXES, money_rule
from voxflow.text.normalize.numbers import (
    cardinal,
    decade,
    digits,
    fraction,
    number,
    ordinal,
    year,
)
from voxflow.text.normalize.units import ATTACHED_UNITS, is_one, unit_after
from voxflow.text.normalize.years import read_year

__all__ = ["NUMERIC_KINDS", "numeric_rule", "range_dash_rule", "version_rule"]

# Without a currency only unambiguous suffixes count: "4K" is a resolution, "5m" five meters.
_BARE_SCALE_SUFFIXES = ("k", "M", "bn")
_ORDINAL_SUFFIX = re.compile(r"(st|nd|rd|th|ST|ND|RD|TH)")
_DECADE = re.compile(r"(?:(\d{3}0)|['’](\d0)|(\d0))(?:['’]?s)")
_FRACTION = re.compile(r"(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)")
_FEET_INCHES = re.compile(r"(\d{1,2})['’](\d{1,2})(?:\"|”|''|’’)")
# Slashed pairs said as idioms rather than as fractions.
_SLASH_IDIOMS = {("24", "7"): "twenty-four seven", ("9", "11"): "nine eleven"}
_DEGREES = re.compile(r"[ \u00a0]?°(?:[ \u00a0]?([CF])(?![A-Za-z]))?")
_TIMES = re.compile(r"[x×](\d+)?")
_VERSION = re.compile(r"[vV]?(\d+(?:\.\d+){2,})")
_RANGE_DASH = re.compile(r"[-–]|[ \u00a0]–[ \u00a0]")
_SIGNS = {"-": "minus", "−": "minus", "+": "plus"}
# Kinds of match that a range dash may follow.
NUMERIC_KINDS = frozenset(
    {"number", "year", "ordinal", "percent", "unit", "money", "time", "date", "degrees"}
)
_DATE_RANGES = ("range:date", "range:ordinal")
_UNICODE_FRACTIONS = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4)}


def _fraction(top: str, bottom: str) -> str:
    """ "3/4" -> "three quarters"; a ratio or score that is no simple fraction reads "out of"
    ("4.5/5" -> "four point five out of five", "10/10" -> "ten out of ten")."""
    if (top, bottom) in _SLASH_IDIOMS:
        return _SLASH_IDIOMS[(top, bottom)]
    if top.isdigit() and bottom.isdigit() and int(top) < int(bottom) <= 16:
        spoken = fraction(int(top), int(bottom))
        if " over " not in spoken:
            return spoken
    return f"{number(top)} out of {number(bottom)}"


def _plain_number(
    ctx: Context, start: int, num_start: int, num: str, sign: str, prev: Match | None
) -> Match | None:
    """A number not followed by a currency symbol: suffixes, units, percent, degrees."""
    text = ctx.text
    end = num_start + len(num)
    prefix = f"{_SIGNS[sign]} " if sign else ""
    value = num.replace(",", "")
    integer = value.isdigit()

    if integer and not sign:
        suffix = _ORDINAL_SUFFIX.match(text, end)
        if suffix is not None and is_right_edge(text, suffix.end()):
            return whole(ordinal(int(value)), start, suffix.end(), "ordinal")
        after_date = prev is not None and prev.end == start and prev.kind in _DATE_RANGES
        if after_date and is_right_edge(text, end) and 1 <= int(value) <= 31:
            # "Nov. 22-24": the second day of a date range is an ordinal too.
            return whole(ordinal(int(value)), start, end, "ordinal")
        height = _FEET_INCHES.match(text, start)
        if height is not None and is_right_edge(text, height.end()):
            feet, inches = int(height.group(1)), int(height.group(2))
            spoken = f"{cardinal(feet)} {'foot' if feet == 1 else 'feet'} {cardinal(inches)}"
            spoken += " inch" if inches == 1 else " inches"
            return whole(spoken, start, height.end(), "unit")

    slashed = _FRACTION.match(text, num_start)
    if (
        slashed is not None
        and is_right_edge(text, slashed.end())
        and not text.startswith("/", slashed.end())
    ):
        spoken = prefix + _fraction(slashed.group(1), slashed.group(2))
        return whole(spoken, start, slashed.end(), "number")

    if text.startswith("%", end):
        return whole(f"{prefix}{number(num)} percent", start, end + 1, "percent")
    if text.startswith(" %", end) and is_right_edge(text, end + 2):
        return whole(f"{prefix}{number(num)} percent", start, end + 2, "percent")

    degrees = _DEGREES.match(text, end)
    if degrees is not None and is_right_edge(text, degrees.end()):
        word = "degree" if is_one(num) else "degrees"
        scale = {"C": " Celsius", "F": " Fahrenheit"}.get(degrees.group(1) or "", "")
        spoken = f"{prefix}{number(num)} {word}{scale}"
        return whole(spoken, start, degrees.end(), "degrees")

    suffix_scale = next((s for s in _BARE_SCALE_SUFFIXES if text.startswith(s, end)), "")
    if suffix_scale and is_right_edge(text, end + len(suffix_scale)):
        spoken = f"{prefix}{number(num)} {SCALE_SUFFIXES[suffix_scale]}"
        return whole(spoken, start, end + len(suffix_scale), "number")

    unit = unit_after(text, end, sign + num)
    if unit is not None:
        words, unit_end = unit
        pieces = (
            Piece(prefix + number(num), start, end),
            Piece(words, end + (1 if text[end] in " \u00a0" else 0), unit_end),
        )
        return Match(start, unit_end, pieces, "unit")

    times = _TIMES.match(text, end)
    if times is not None and is_right_edge(text, times.end()):
        if times.group(1) is None:
            return whole(f"{prefix}{number(num)} times", start, times.end(), "number")
        spoken = f"{prefix}{number(num)} by {number(times.group(1))}"
        return whole(spoken, start, times.end(), "number")

    attached = ATTACHED_UNITS.get(text[end : end + 1])
    if attached is not None and is_right_edge(text, end + 1):
        spoken = f"{prefix}{number(num)} {attached[0] if is_one(num) else attached[1]}"
        return Match(start, end + 1, (Piece(spoken, start, end + 1),), "unit")
    if end < len(text) and (text[end].isalnum() or text[end] == "_") and integer:
        # "4K", "3D", "2FA": a mixed token, read piece by piece by another rule. A decimal
        # is read here ("2.5GB" was handled above; "9.58x" reads the number, then the rest).
        return None
    is_year_shaped = integer and not sign and len(num) == 4 and num[0] != "0"
    if is_year_shaped and read_year(text, start, end, int(num), prev):
        return whole(year(int(num)), start, end, "year")
    return whole(prefix + number(num), start, end, "number")


def numeric_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Money, percentages, units, ordinals, decades, fractions and plain numbers at ``pos``."""
    text = ctx.text
    char = text[pos]
    if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] == "_"):
        return None
    if char in _UNICODE_FRACTIONS:
        top, bottom = _UNICODE_FRACTIONS[char]
        return whole(fraction(top, bottom), pos, pos + 1, "number")

    decade_match = _DECADE.match(text, pos)
    if decade_match is not None and is_right_edge(text, decade_match.end()):
        value = decade_match.group(1) or decade_match.group(2) or decade_match.group(3)
        apostrophe = decade_match.group(2) is not None
        if apostrophe or is_left_edge(text, pos):
            return whole(decade(int(value)), pos, decade_match.end(), "decade")

    sign = ""
    body = pos
    if char in _SIGNS and is_left_edge(text, pos):
        sign = char
        body = pos + 1
    elif char == "−":
        # A true minus sign is never a hyphen, whatever precedes it.
        sign = char
        body = pos + 1
    if body >= len(text):
        return None
    if text[body] in CURRENCIES:
        if sign == "+":
            return None
        return money_rule(text, pos, body, f"{_SIGNS[sign]} " if sign else "")
    found = NUMBER.match(text, body)
    if found is None:
        return None
    if not sign and text[pos] == "." and not is_left_edge(text, pos):
        return None
    return _plain_number(ctx, pos, body, found.group(), sign, prev)


def version_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Dotted number groups: versions ("v1.2.3" -> "version one point two point three") and
    IPv4 addresses ("192.168.0.1" -> "one ninety-two dot one sixty-eight dot zero dot one")."""
    del prev
    text = ctx.text
    if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] in "._"):
        return None
    found = _VERSION.match(text, pos)
    if found is None or not is_right_edge(text, found.end()):
        return None
    parts = found.group(1).split(".")
    if len(parts) == 4 and all(len(p) <= 3 and int(p) <= 255 for p in parts):
        spoken = " dot ".join(_ip_octet(p) for p in parts)
    else:
        spoken = " point ".join(number(p) for p in parts)
    if found.start(1) > pos and prev_word(text, pos) != "version":
        spoken = "version " + spoken
    return whole(spoken, pos, found.end(), "version")


def _ip_octet(part: str) -> str:
    # Octets are read the way people say them: "one sixty-eight", not "one hundred sixty-eight".
    if len(part) > 1 and part[0] == "0":
        return digits(part)
    if len(part) == 3 and part[1] != "0":
        return f"{cardinal(int(part[0]))} {cardinal(int(part[1:]))}"
    return cardinal(int(part))


def range_dash_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """The dash of a numeric range ("5-10", an en dash with or without spaces around it,
    "9:00-17:00") reads "to"."""
    if prev is None or prev.end != pos or prev.kind not in NUMERIC_KINDS:
        return None
    text = ctx.text
    found = _RANGE_DASH.match(text, pos)
    if found is None or found.end() >= len(text):
        return None
    after = text[found.end()]
    if not (after.isdigit() or after in CURRENCIES):
        return None
    return whole("to", pos, found.end(), "range:" + prev.kind)
