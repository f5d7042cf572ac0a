"""How an SSML ``Say`` item is spoken: the text that stands in for its written words.

A ``<sub>`` says its alias (normalized like any text), a ``<phoneme>`` its phonemes as a Piper
raw-phoneme block (ARPAbet converted to the voice's IPA), and a ``<say-as>`` its written text read
the way ``interpret-as`` says:

* ``characters``, ``spell-out`` (and Cartesia's ``<spell>``): every letter and digit on its own,
  other characters left out ("ABC-123" -> "A B C one two three");
* ``digits``: every digit on its own;
* ``cardinal`` and ``ordinal``: one number ("1,234", "3rd");
* ``telephone``: the digits one by one, a pause between groups, "plus" for a leading "+";
* ``date``: numbers in the order ``format`` gives (``mdy``, the default, ``dmy``, ``ymd``, ``md``,
  ``dm``, ``my``, ``ym``, ``y``), separated by anything but digits; a month may be a name;
* ``time`` and ``currency``: the normalizer's own reading of the written text.

Written text that the kind cannot read raises ``ValueError`` saying why.
"""

from __future__ import annotations

import re

from voxflow.text.arpabet import to_ipa
from voxflow.text.lexicon import phoneme_block
from voxflow.text.normalize.datetime import MONTHS, spell_letter, spoken_date
from voxflow.text.normalize.normalizer import Normalizer
from voxflow.text.normalize.numbers import cardinal, digits, number, ordinal, year
from voxflow.text.ssml import Say

__all__ = ["DATE_FORMATS", "spoken_form"]

DATE_FORMATS = frozenset({"mdy", "dmy", "ymd", "md", "dm", "my", "ym", "y"})
_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[+-]?\.\d+")
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)?", re.IGNORECASE)
_DATE_PART = re.compile(r"\d+|[A-Za-z]+\.?")
_MONTH_PREFIXES = {name.lower()[:3]: value for value, name in enumerate(MONTHS, start=1)}


def spoken_form(say: Say, normalizer: Normalizer) -> str:
    """The spoken text that replaces ``say.written``."""
    if say.alias is not None:
        return normalizer.normalize(say.alias).text
    if say.phonemes is not None:
        ipa = say.phonemes if say.alphabet in (None, "ipa") else to_ipa(say.phonemes)
        if "[[" in ipa or "]]" in ipa:
            raise ValueError("phonemes may not contain '[[' or ']]'")
        return phoneme_block(ipa)
    written = say.written.strip()
    match say.interpret_as:
        case "characters" | "spell-out":
            return _spelled(written)
        case "digits":
            return _required(digits(written), written, "digits")
        case "cardinal":
            return _cardinal(written)
        case "ordinal":
            found = _ORDINAL.fullmatch(written.replace(",", ""))
            if found is None:
                raise ValueError(f"say-as ordinal: {written!r} is not a number like 3 or 3rd")
            return ordinal(int(found.group(1)))
        case "telephone":
            return _telephone(written)
        case "date":
            return _date(written, say.format or "mdy")
        case _:  # time, currency: the normalizer's rules for them
            return normalizer.normalize(written).text


def _required(spoken: str, written: str, kind: str) -> str:
    if not spoken:
        raise ValueError(f"say-as {kind}: {written!r} has nothing to read as {kind}")
    return spoken


def _spelled(written: str) -> str:
    parts = [
        digits(char) if char.isdigit() else spell_letter(char) for char in written if char.isalnum()
    ]
    return _required(" ".join(parts), written, "characters")


def _cardinal(written: str) -> str:
    if _NUMBER.fullmatch(written) is None:
        raise ValueError(f"say-as cardinal: {written!r} is not a number like 1,234 or 3.5")
    sign = {"-": "minus ", "+": "plus "}.get(written[0], "")
    body = written.lstrip("+-")
    if "." in body:
        return sign + number(body)
    return sign + cardinal(int(body.replace(",", "")))


def _telephone(written: str) -> str:
    groups = re.findall(r"\d+", written)
    if not groups:
        raise ValueError(f"say-as telephone: {written!r} has no digits")
    spoken = ", ".join(digits(group) for group in groups)
    return ("plus " + spoken) if written.startswith("+") else spoken


def _date(written: str, form: str) -> str:
    if form not in DATE_FORMATS:
        raise ValueError(f"say-as date format {form!r}: one of {', '.join(sorted(DATE_FORMATS))}")
    parts = _DATE_PART.findall(written)
    if len(parts) != len(form):
        raise ValueError(f"say-as date: {written!r} does not have the parts of format {form!r}")
    values: dict[str, int] = {}
    for letter, part in zip(form, parts, strict=True):
        if part[0].isdigit():
            values[letter] = int(part)
        elif letter == "m" and part.rstrip(".").lower()[:3] in _MONTH_PREFIXES:
            values[letter] = _MONTH_PREFIXES[part.rstrip(".").lower()[:3]]
        else:
            raise ValueError(f"say-as date: {part!r} is not a number (or a month's name)")
    month, day, year_value = values.get("m"), values.get("d"), values.get("y")
    if month is not None and not 1 <= month <= 12:
        raise ValueError(f"say-as date: {month} is not a month")
    if day is not None and not 1 <= day <= 31:
        raise ValueError(f"say-as date: {day} is not a day of a month")
    if year_value is not None and len(parts[form.index("y")]) == 2:
        year_value += 2000 if year_value < 50 else 1900
    if month is None:
        if year_value is None:
            raise ValueError(f"say-as date: {written!r} names no month or year")
        return year(year_value) if day is None else f"the {ordinal(day)}, {year(year_value)}"
    return spoken_date(month, day, year_value)
