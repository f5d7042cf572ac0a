"""Normalizer rules for numeric expressions: money, percentages, units, ordinals, decades,
fractions, versions, years, plain numbers and the dash of a numeric range.

Decisions for ambiguous input (US English):

* A bare four-digit number is a year ("nineteen ninety-nine") when a year cue precedes it
  ("in", "since", "by", ... see ``_YEAR_CUES``) and it lies in 1000..2099, or when it lies in
  1900..2099 and no lower-case word follows it ("1999.", "2026 Olympics", "1999 was"); otherwise
  it is a cardinal ("1999 people" -> "one thousand nine hundred ninety-nine people").
* A number with a leading zero ("007") or past the trillions is read digit by digit.
* Money uses "and" between units and cents ("three dollars and fifty cents"); amounts under one
  unit are read as cents alone ("$0.99" -> "ninety-nine cents"); an amount with more than two
  decimals or a scale ("$1.2M", "$5 billion") is read as a number before the plural unit.
* A unit abbreviation is singular only after exactly "1" ("1 km", "-1 °C"), plural otherwise
  ("1.0 km", "0.5 km"), as US style guides have it.
* "-" directly between two numbers is a range ("5-10" -> "five to ten"), like an en dash with or
  without spaces; a spaced hyphen is left alone (it may be a subtraction or a pause).
* "-" or a minus sign (U+2212) starting a token before a digit is a minus sign; "+" there is "plus".
"""

from __future__ import annotations

import re

from voxflow.text.normalize_base import (
    Context,
    Match,
    Piece,
    is_left_edge,
    is_right_edge,
    next_word,
    prev_word,
    whole,
)
from voxflow.text.normalize_numbers import (
    cardinal,
    decade,
    digits,
    fraction,
    number,
    ordinal,
    year,
)

__all__ = [
    "CURRENCIES",
    "NUMERIC_KINDS",
    "UNITS",
    "numeric_rule",
    "range_dash_rule",
    "version_rule",
]

# symbol -> (unit, units, subunit, subunits); no subunit means decimals are read with "point".
CURRENCIES: dict[str, tuple[str, str, str | None, str | None]] = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "¥": ("yen", "yen", None, None),
    "₹": ("rupee", "rupees", None, None),
    "₩": ("won", "won", None, None),
}

# Abbreviation -> (singular, plural). Case matters ("mB" is not "MB"); ambiguous short words
# that are also English ("in", "us", "a", "s", "t") are left out on purpose.
UNITS: dict[str, tuple[str, str]] = {
    "km": ("kilometer", "kilometers"),
    "m": ("meter", "meters"),
    "cm": ("centimeter", "centimeters"),
    "mm": ("millimeter", "millimeters"),
    "µm": ("micrometer", "micrometers"),
    "nm": ("nanometer", "nanometers"),
    "mi": ("mile", "miles"),
    "ft": ("foot", "feet"),
    "yd": ("yard", "yards"),
    "kg": ("kilogram", "kilograms"),
    "g": ("gram", "grams"),
    "mg": ("milligram", "milligrams"),
    "lb": ("pound", "pounds"),
    "lbs": ("pound", "pounds"),
    "oz": ("ounce", "ounces"),
    "L": ("liter", "liters"),
    "ml": ("milliliter", "milliliters"),
    "mL": ("milliliter", "milliliters"),
    "gal": ("gallon", "gallons"),
    "mph": ("mile per hour", "miles per hour"),
    "km/h": ("kilometer per hour", "kilometers per hour"),
    "kph": ("kilometer per hour", "kilometers per hour"),
    "m/s": ("meter per second", "meters per second"),
    "h": ("hour", "hours"),
    "hr": ("hour", "hours"),
    "hrs": ("hour", "hours"),
    "min": ("minute", "minutes"),
    "mins": ("minute", "minutes"),
    "sec": ("second", "seconds"),
    "ms": ("millisecond", "milliseconds"),
    "µs": ("microsecond", "microseconds"),
    "ns": ("nanosecond", "nanoseconds"),
    "yr": ("year", "years"),
    "yrs": ("year", "years"),
    "KB": ("kilobyte", "kilobytes"),
    "kB": ("kilobyte", "kilobytes"),
    "MB": ("megabyte", "megabytes"),
    "GB": ("gigabyte", "gigabytes"),
    "TB": ("terabyte", "terabytes"),
    "PB": ("petabyte", "petabytes"),
    "kbps": ("kilobit per second", "kilobits per second"),
    "Mbps": ("megabit per second", "megabits per second"),
    "Gbps": ("gigabit per second", "gigabits per second"),
    "Hz": ("hertz", "hertz"),
    "kHz": ("kilohertz", "kilohertz"),
    "MHz": ("megahertz", "megahertz"),
    "GHz": ("gigahertz", "gigahertz"),
    "W": ("watt", "watts"),
    "kW": ("kilowatt", "kilowatts"),
    "MW": ("megawatt", "megawatts"),
    "Wh": ("watt hour", "watt hours"),
    "kWh": ("kilowatt hour", "kilowatt hours"),
    "V": ("volt", "volts"),
    "mA": ("milliamp", "milliamps"),
    "mAh": ("milliamp hour", "milliamp hours"),
    "dB": ("decibel", "decibels"),
    "px": ("pixel", "pixels"),
    "cal": ("calorie", "calories"),
    "kcal": ("kilocalorie", "kilocalories"),
    "m²": ("square meter", "square meters"),
    "km²": ("square kilometer", "square kilometers"),
    "ft²": ("square foot", "square feet"),
    "sq ft": ("square foot", "square feet"),
    "m³": ("cubic meter", "cubic meters"),
    "USD": ("U S dollar", "U S dollars"),
    "EUR": ("euro", "euros"),
    "GBP": ("pound", "pounds"),
}
# Longest first, so "km/h" wins over "km" and "kWh" over "kW".
_UNIT_PATTERN = re.compile(
    r"[ \u00a0]?(" + "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True)) + ")"
)

_SCALE_SUFFIXES = {
    "k": "thousand",
    "K": "thousand",
    "m": "million",
    "M": "million",
    "mn": "million",
    "B": "billion",
    "bn": "billion",
    "tn": "trillion",
}
# Without a currency only unambiguous suffixes count: "4K" is a resolution, "5m" five meters.
_BARE_SCALE_SUFFIXES = ("k", "M", "bn")

_NUMBER = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+")
_CURRENCY_SCALE = re.compile(r"[ \u00a0]?(thousand|million|billion|trillion)\b|(bn|tn|mn|[kKmMB])")
_MONEY_RANGE = re.compile(r"[ \u00a0]?[-–][ \u00a0]?([$€£¥₹₩])?")
_ORDINAL_SUFFIX = re.compile(r"(st|nd|rd|th|ST|ND|RD|TH)")
_DECADE = re.compile(r"(?:(\d{3}0)|['’](\d0)|(\d0))(?:['’]?s)")
_FRACTION = re.compile(r"(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)")
_FEET_INCHES = re.compile(r"(\d{1,2})['’](\d{1,2})(?:\"|”|''|’’)")
# Slashed pairs said as idioms rather than as fractions.
_SLASH_IDIOMS = {("24", "7"): "twenty-four seven", ("9", "11"): "nine eleven"}
# Units written straight after a number only ("9.58s"); spaced, they would be words ("5 s").
_ATTACHED_UNITS = {"s": ("second", "seconds")}
_DEGREES = re.compile(r"[ \u00a0]?°(?:[ \u00a0]?([CF])(?![A-Za-z]))?")
_TIMES = re.compile(r"[x×](\d+)?")
_VERSION = re.compile(r"[vV]?(\d+(?:\.\d+){2,})")
_RANGE_DASH = re.compile(r"[-–]|[ \u00a0]–[ \u00a0]")
_SIGNS = {"-": "minus", "−": "minus", "+": "plus"}

# Words after which a four-digit number is a year whatever follows ("in 1999 prices rose").
_YEAR_CUES = frozenset(
    {
        "in", "since", "by", "until", "till", "circa", "c", "ca", "year", "during", "before",
        "after", "early", "late", "mid", "spring", "summer", "fall", "autumn", "winter", "class",
        "vintage", "fiscal", "fy", "season",
    }
)  # fmt: skip
# Weaker cues: a year unless a counted noun follows ("from 1999 to 2005" but "to 1999 people").
_WEAK_YEAR_CUES = frozenset(
    {
        "from", "to", "of", "through", "between", "and", "or", "around",
    }
)  # fmt: skip
# Words after which a four-digit number is a year even though a lower-case word follows it.
_YEAR_NEXT = frozenset(
    {
        "was", "is", "has", "this", "its", "as", "plus", "thus", "versus", "us", "his",
    }
)  # fmt: skip
# Plural nouns not ending in "s": "1999 people" is a count, not a year.
_COUNT_NOUNS = frozenset(
    {
        "people", "men", "women", "children", "feet", "teeth", "mice", "geese", "persons",
    }
)  # fmt: skip
# Kinds of match that a range dash may follow.
NUMERIC_KINDS = frozenset(
    {"number", "year", "ordinal", "percent", "unit", "money", "time", "date", "degrees"}
)
_DATE_RANGES = ("range:date", "range:ordinal")
_UNICODE_FRACTIONS = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4)}


def _is_one(text: str) -> bool:
    return text.lstrip("-−+") == "1"


def _money(amount: str, scale: str, symbol: str, bare: bool = False) -> str:
    """Spoken amount of money; ``bare`` leaves out the unit (the first half of a range)."""
    unit, units, sub, subs = CURRENCIES[symbol]
    whole_part, _, frac = amount.replace(",", "").partition(".")
    if scale:
        return number(amount) + f" {scale}" + ("" if bare else f" {units}")
    if sub is None or subs is None or len(frac) > 2:
        return number(amount) + ("" if bare else f" {units}")
    main = int(whole_part) if whole_part else 0
    cents = int(frac.ljust(2, "0")) if frac else 0
    if bare and not cents:
        return cardinal(main)
    parts: list[str] = []
    if main or not cents:
        parts.append(f"{cardinal(main)} {unit if main == 1 else units}")
    if cents:
        parts.append(f"{cardinal(cents)} {sub if cents == 1 else subs}")
    return " and ".join(parts)


def _currency_scale(text: str, pos: int) -> tuple[str, int]:
    """A scale word or suffix after an amount of money ("$5 billion", "€1.2M"), and its end."""
    found = _CURRENCY_SCALE.match(text, pos)
    if found is None:
        return "", pos
    if found.group(1):
        return found.group(1), found.end()
    if not is_right_edge(text, found.end()):
        return "", pos
    return _SCALE_SUFFIXES[found.group(2)], found.end()


def _money_rule(text: str, pos: int, sign: str) -> Match | None:
    symbol = text[pos]
    amount = _NUMBER.match(text, pos + 1)
    if amount is None:
        return None
    scale, end = _currency_scale(text, amount.end())
    if not scale and not is_right_edge(text, end):
        return None
    start = pos - len(sign)
    prefix = f"{_SIGNS[sign]} " if sign else ""
    dash = _MONEY_RANGE.match(text, end)
    if dash is not None and dash.group(1) in (None, symbol):
        second = _NUMBER.match(text, dash.end())
        if second is not None:
            scale2, end2 = _currency_scale(text, second.end())
            if scale2 or is_right_edge(text, end2):
                first = prefix + _money(amount.group(), scale, symbol, bare=True)
                last = _money(second.group(), scale2, symbol)
                pieces = (
                    Piece(first, start, end),
                    Piece("to", dash.start(), dash.end()),
                    Piece(last, dash.end(), end2),
                )
                return Match(start, end2, pieces, "money")
    return whole(prefix + _money(amount.group(), scale, symbol), start, end, "money")


def _unit(text: str, pos: int, amount: str) -> tuple[str, int] | None:
    found = _UNIT_PATTERN.match(text, pos)
    if found is None or not is_right_edge(text, found.end()):
        return None
    singular, plural = UNITS[found.group(1)]
    return (singular if _is_one(amount) else plural), found.end()


def _read_year(text: str, start: int, end: int, value: int, prev: Match | None) -> bool:
    if prev is not None and prev.end == start and prev.kind == "range:year":
        return True
    cue = prev_word(text, start)
    if cue in _YEAR_CUES:
        return 1000 <= value <= 2099
    if not (1000 if cue in _WEAK_YEAR_CUES else 1900) <= value <= 2099:
        return False
    after = next_word(text, end)
    if not text[end : end + 1].isspace() or not after[:1].islower() or after in _YEAR_NEXT:
        # "1999.", "1999, when", "2026 Olympics", "1999 was": nothing is being counted.
        return True
    # "1999 people" and "1950 units" count things; "the 2024 election" names a year.
    return not (after in _COUNT_NOUNS or (after.endswith("s") and not after.endswith("ss")))


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
        word = "degree" if _is_one(num) else "degrees"
        scale = {"C": " Celsius", "F": " Fahrenheit"}.get(degrees.group(1) or "", "")
        spoken = f"{prefix}{number(num)} {word}{scale}"
        return whole(spoken, start, degrees.end(), "degrees")

    suffix_scale = next((s for s in _BARE_SCALE_SUFFIXES if text.startswith(s, end)), "")
    if suffix_scale and is_right_edge(text, end + len(suffix_scale)):
        spoken = f"{prefix}{number(num)} {_SCALE_SUFFIXES[suffix_scale]}"
        return whole(spoken, start, end + len(suffix_scale), "number")

    unit = _unit(text, end, sign + num)
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

    attached = _ATTACHED_UNITS.get(text[end : end + 1])
    if attached is not None and is_right_edge(text, end + 1):
        spoken = f"{prefix}{number(num)} {attached[0] if _is_one(num) else attached[1]}"
        return Match(start, end + 1, (Piece(spoken, start, end + 1),), "unit")
    if end < len(text) and (text[end].isalnum() or text[end] == "_") and integer:
        # "4K", "3D", "2FA": a mixed token, read piece by piece by another rule. A decimal
        # is read here ("2.5GB" was handled above; "9.58x" reads the number, then the rest).
        return None
    is_year_shaped = integer and not sign and len(num) == 4 and num[0] != "0"
    if is_year_shaped and _read_year(text, start, end, int(num), prev):
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
        return _money_rule(text, body, sign)
    found = _NUMBER.match(text, body)
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
