"""English (US) number words: cardinals, ordinals, decimals, years, decades, digit strings.

Pure string functions with no offsets; ``voxflow.text.normalize.normalizer`` decides which reading
applies and keeps the map back to the original text. US conventions: no "and" inside cardinals
("one hundred five"), hyphenated tens ("twenty-five"), short scale ("billion" is 10**9).
"""

from __future__ import annotations

__all__ = [
    "MAX_CARDINAL",
    "cardinal",
    "decade",
    "digits",
    "fraction",
    "number",
    "ordinal",
    "pluralize_number_words",
    "year",
]

_ONES = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (10**3, "thousand"))

# Past the trillions, nobody reads a number as words; such strings are identifiers.
MAX_CARDINAL = 10**15 - 1

# Irregular ordinals of the last word; every other word just takes "th" (with y -> ie).
_ORDINAL_WORDS = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}

# Denominators read as words ("three quarters"); others are read "N over D".
_DENOMINATORS = {
    2: ("half", "halves"),
    3: ("third", "thirds"),
    4: ("quarter", "quarters"),
    5: ("fifth", "fifths"),
    6: ("sixth", "sixths"),
    7: ("seventh", "sevenths"),
    8: ("eighth", "eighths"),
    9: ("ninth", "ninths"),
    10: ("tenth", "tenths"),
    16: ("sixteenth", "sixteenths"),
}


def _below_thousand(n: int) -> list[str]:
    words: list[str] = []
    hundreds, rest = divmod(n, 100)
    if hundreds:
        words += [_ONES[hundreds], "hundred"]
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        words.append(f"{_TENS[tens]}-{_ONES[ones]}" if ones else _TENS[tens])
    elif rest or not words:
        words.append(_ONES[rest])
    return words


def cardinal(n: int) -> str:
    """``1234`` -> "one thousand two hundred thirty-four"; negatives get "minus"."""
    if n < 0:
        return "minus " + cardinal(-n)
    if n > MAX_CARDINAL:
        return digits(str(n))
    words: list[str] = []
    for value, name in _SCALES:
        count, n = divmod(n, value)
        if count:
            words += [*_below_thousand(count), name]
    if n or not words:
        words += _below_thousand(n)
    return " ".join(words)


def _ordinal_word(word: str) -> str:
    if "-" in word:
        head, _, tail = word.rpartition("-")
        return f"{head}-{_ordinal_word(tail)}"
    if word in _ORDINAL_WORDS:
        return _ORDINAL_WORDS[word]
    if word.endswith("y"):
        return word[:-1] + "ieth"
    return word + "th"


def ordinal(n: int) -> str:
    """``22`` -> "twenty-second", ``103`` -> "one hundred third"."""
    words = cardinal(n).split(" ")
    words[-1] = _ordinal_word(words[-1])
    return " ".join(words)


def _plural_word(word: str) -> str:
    if "-" in word:
        head, _, tail = word.rpartition("-")
        return f"{head}-{_plural_word(tail)}"
    if word.endswith("y"):
        return word[:-1] + "ies"
    if word.endswith(("x", "s")):
        return word + "es"
    return word + "s"


def pluralize_number_words(words: str) -> str:
    """Plural of a number reading: "nineteen ninety" -> "nineteen nineties", "six" -> "sixes"."""
    head, _, last = words.rpartition(" ")
    plural = _plural_word(last)
    return f"{head} {plural}" if head else plural


def digits(text: str) -> str:
    """Each digit on its own: "5550" -> "five five five zero" (non-digits are skipped)."""
    return " ".join(_ONES[int(char)] for char in text if char.isdigit())


def _leading_zero(text: str) -> bool:
    return len(text) > 1 and text[0] == "0"


def number(text: str) -> str:
    """A written number: optional thousands commas and decimal part ("1,234.5", ".5", "007").

    Integers with a leading zero and very long digit strings are identifiers, read digit by
    digit; the fraction part is always read digit by digit ("three point one four").
    """
    whole, _, frac = text.replace(",", "").partition(".")
    if whole and (_leading_zero(whole) or int(whole) > MAX_CARDINAL):
        spoken = digits(whole)
    else:
        spoken = cardinal(int(whole)) if whole else ""
    if "." in text:
        point = f"point {digits(frac)}" if frac else "point"
        spoken = f"{spoken} {point}" if spoken else point
    return spoken


def year(n: int) -> str:
    """``1999`` -> "nineteen ninety-nine", ``2005`` -> "two thousand five", ``2026`` ->
    "twenty twenty-six", ``1905`` -> "nineteen oh five", ``1900`` -> "nineteen hundred".

    Years outside 1000..9999 and round thousands are plain cardinals; 2001..2009 keep the
    "two thousand five" form that US speakers use for that decade.
    """
    if n < 1000 or n > 9999 or n % 1000 == 0 or 2000 < n < 2010:
        return cardinal(n)
    high, low = divmod(n, 100)
    if low == 0:
        return f"{cardinal(high)} hundred"
    if low < 10:
        return f"{cardinal(high)} oh {cardinal(low)}"
    return f"{cardinal(high)} {cardinal(low)}"


def decade(n: int) -> str:
    """Plural reading of a decade or century: 1990 -> "nineteen nineties", 1900 -> "nineteen
    hundreds", 2000 -> "two thousands", 90 -> "nineties"."""
    return pluralize_number_words(year(n) if n >= 1000 else cardinal(n))


def fraction(numerator: int, denominator: int) -> str:
    """``3/4`` -> "three quarters", ``1/2`` -> "one half", ``5/32`` -> "five over thirty-two"."""
    names = _DENOMINATORS.get(denominator)
    if names is None or denominator == 0:
        return f"{cardinal(numerator)} over {cardinal(denominator)}"
    return f"{cardinal(numerator)} {names[0] if numerator == 1 else names[1]}"
