"""Normalizer rule for stand-alone symbols ("&" -> "and", "#5" -> "number five")."""

from __future__ import annotations

from voxflow.text.normalize.base import Context, Match, whole

__all__ = ["symbol_rule"]

_SYMBOLS = {
    "&": "and",
    "@": "at",
    "+": "plus",
    "=": "equals",
    "%": "percent",
    "°": "degrees",
    "×": "times",
    "÷": "divided by",
    "±": "plus or minus",
    "≈": "approximately",
    "§": "section",
    "№": "number",
    "−": "minus",
}


def symbol_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Stand-alone symbols: "&" -> "and", "#5" -> "number five", "#tag" -> "hash tag"."""
    del prev
    text = ctx.text
    char = text[pos]
    if char == "#":
        follows_digit = text[pos + 1 : pos + 2].isdigit()
        return whole("number" if follows_digit else "hash", pos, pos + 1, "symbol")
    if char == "~" and text[pos + 1 : pos + 2].isdigit():
        return whole("about", pos, pos + 1, "symbol")
    spoken = _SYMBOLS.get(char)
    if spoken is None:
        return None
    return whole(spoken, pos, pos + 1, "symbol")
