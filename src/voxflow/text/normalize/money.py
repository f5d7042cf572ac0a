"""Normalizer reading of money: "$3.50" -> "three dollars and fifty cents".

Decisions for ambiguous input (US English): money uses "and" between units and cents ("three
dollars and fifty cents"); amounts under one unit are read as cents alone ("$0.99" -> "ninety-nine
cents"); an amount with more than two decimals or a scale ("$1.2M", "$5 billion") is read as a
number before the plural unit. In a range the unit is said once, after the second amount
("$5-10" -> "five to ten dollars").

``numeric_rule`` calls ``money_rule`` when a currency symbol starts a number; the number pattern
and the scale suffixes live here because plain numbers use them too.
"""

from __future__ import annotations

import re

from voxflow.text.normalize.base import Match, Piece, is_right_edge, whole
from voxflow.text.normalize.numbers import cardinal, number

__all__ = ["CURRENCIES", "NUMBER", "SCALE_SUFFIXES", "money_rule"]

# symbol -> (unit, units, subunit, subunits); no subunit means decimals are read with "point".
CURRENCIES: dict[str, tuple[str, str, str | None, str | None]] = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "¥": ("yen", "yen", None, None),
    "₹": ("rupee", "rupees", None, None),
    "₩": ("won", "won", None, None),
}

SCALE_SUFFIXES = {
    "k": "thousand",
    "K": "thousand",
    "m": "million",
    "M": "million",
    "mn": "million",
    "B": "billion",
    "bn": "billion",
    "tn": "trillion",
}

NUMBER = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+")
_CURRENCY_SCALE = re.compile(r"[ \u00a0]?(thousand|million|billion|trillion)\b|(bn|tn|mn|[kKmMB])")
_MONEY_RANGE = re.compile(r"[ \u00a0]?[-–][ \u00a0]?([$€£¥₹₩])?")


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
    return SCALE_SUFFIXES[found.group(2)], found.end()


def money_rule(text: str, start: int, pos: int, prefix: str) -> Match | None:
    """An amount or a range of money whose currency symbol is at ``pos``; the match starts at
    ``start`` (a sign before the symbol) and ``prefix`` is that sign spoken ("minus ")."""
    symbol = text[pos]
    amount = NUMBER.match(text, pos + 1)
    if amount is None:
        return None
    scale, end = _currency_scale(text, amount.end())
    if not scale and not is_right_edge(text, end):
        return None
    dash = _MONEY_RANGE.match(text, end)
    if dash is not None and dash.group(1) in (None, symbol):
        second = NUMBER.match(text, dash.end())
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
