"""Normalizer rule for abbreviations: titles, Latin and common abbreviations, and those that
introduce a number.

Decisions for ambiguous input:

* "Dr." is always "Doctor" (the "Drive" reading is out of scope). "St." is "Street" after a
  number or ordinal ("42nd St.") or after a capitalised word that does not open the sentence
  ("Main St."), "Saint" before a capitalised word ("Visit St. Louis"), and "Street" otherwise.
* "No.", "Fig.", "Vol.", "p." and friends are expanded only before a number ("No. 5" -> "number
  five"); otherwise they are words or the end of a sentence.
* An abbreviation's period that also ends the text (or, for "etc.", comes before a capital) is
  kept after the expansion so the sentence still ends there; titles never end a sentence.
"""

from __future__ import annotations

import re

from voxflow.text.normalize.base import Context, Match, Piece, ends_sentence
from voxflow.text.normalize.letters import starts_token

__all__ = ["abbreviation_rule"]

# Titles that always precede a name: their period never ends a sentence.
_TITLES = {
    "Mr.": "Mister",
    "Mrs.": "Missus",
    "Ms.": "Miz",
    "Dr.": "Doctor",
    "Prof.": "Professor",
    "Gov.": "Governor",
    "Sen.": "Senator",
    "Rep.": "Representative",
    "Gen.": "General",
    "Capt.": "Captain",
    "Lt.": "Lieutenant",
    "Sgt.": "Sergeant",
    "Rev.": "Reverend",
    "Mt.": "Mount",
    "Ft.": "Fort",
}
# The same titles without a period (British style) count only before a capitalised name.
_BARE_TITLES = {"Mr": "Mister", "Mrs": "Missus", "Ms": "Miz", "Dr": "Doctor", "Prof": "Professor"}
_GENERAL = {
    "vs.": "versus",
    "vs": "versus",
    "etc.": "et cetera",
    "etc": "et cetera",
    "e.g.": "for example",
    "e.g": "for example",
    "i.e.": "that is",
    "i.e": "that is",
    "approx.": "approximately",
    "Approx.": "approximately",
    "a.k.a.": "also known as",
    "Jr.": "Junior",
    "Sr.": "Senior",
    "Inc.": "Incorporated",
    "Ltd.": "Limited",
    "Corp.": "Corporation",
    "Ave.": "Avenue",
    "Blvd.": "Boulevard",
    "Rd.": "Road",
    "Dept.": "Department",
    "Ph.D.": "P H D",
    "w/": "with",
    "w/o": "without",
}
_BEFORE_NUMBER = {
    "No.": "number",
    "no.": "number",
    "Nos.": "numbers",
    "Fig.": "figure",
    "fig.": "figure",
    "Vol.": "volume",
    "vol.": "volume",
    "p.": "page",
    "pp.": "pages",
    "Ch.": "chapter",
    "ch.": "chapter",
    "Sec.": "section",
    "Eq.": "equation",
    "Art.": "article",
    "Pt.": "part",
    "Rm.": "room",
    "Apt.": "apartment",
    "Ste.": "suite",
    "ext.": "extension",
    "Ext.": "extension",
}
_ABBREVIATIONS = {**_TITLES, **_BARE_TITLES, **_GENERAL, **_BEFORE_NUMBER, "St.": "", "St": ""}
_ABBREVIATION = re.compile(
    "|".join(re.escape(key) for key in sorted(_ABBREVIATIONS, key=len, reverse=True))
)
_KEEP_PERIOD_BEFORE_CAPITAL = frozenset({"etc."})
_CAPITAL_AFTER = re.compile(r"[ \u00a0]+[\"'“‘(]?[A-Z]")
_NUMBER_AFTER = re.compile(r"[ \u00a0]?#?\d")
_ORDINAL_BEFORE = re.compile(r"\d(?:st|nd|rd|th)?[ \u00a0]+$")
_CAPITALISED_BEFORE = re.compile(r"[A-Z][a-z]+[ \u00a0]+$")


def _keep_period(key: str, text: str, end: int) -> bool:
    if not key.endswith(".") or key in _TITLES:
        return False
    if ends_sentence(text, end):
        return True
    return key in _KEEP_PERIOD_BEFORE_CAPITAL and _CAPITAL_AFTER.match(text, end) is not None


def _saint_or_street(text: str, pos: int, end: int) -> str:
    before = text[max(0, pos - 32) : pos]
    if _ORDINAL_BEFORE.search(before):
        return "Street"
    name = _CAPITALISED_BEFORE.search(before)
    if name is not None:
        # A capitalised word that does not open the sentence names the street ("Main St.");
        # one that does is just a capital ("Visit St. Louis").
        earlier = before[: name.start()].rstrip()
        if earlier and earlier[-1] not in ".!?:;\"'“‘(":
            return "Street"
    if _CAPITAL_AFTER.match(text, end):
        return "Saint"
    return "Street"


def abbreviation_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Titles, Latin abbreviations and abbreviations that introduce a number."""
    del prev
    text = ctx.text
    if not starts_token(text, pos):
        return None
    found = _ABBREVIATION.match(text, pos)
    if found is None:
        return None
    key = found.group()
    end = found.end()
    if end < len(text) and (
        text[end].isalnum() or (not key.endswith((".", "/")) and text[end] in ".")
    ):
        return None
    if key in _BEFORE_NUMBER:
        if not _NUMBER_AFTER.match(text, end):
            return None
        spoken = _BEFORE_NUMBER[key]
    elif key in ("St.", "St"):
        if key == "St" and not _CAPITAL_AFTER.match(text, end):
            return None
        spoken = _saint_or_street(text, pos, end)
    elif key in _BARE_TITLES:
        if not _CAPITAL_AFTER.match(text, end):
            return None
        spoken = _BARE_TITLES[key]
    else:
        spoken = _ABBREVIATIONS[key]
    if key[0].isupper() and spoken[0].islower():
        # Keep a capital that starts a sentence ("No. 5 is" -> "Number five is").
        spoken = spoken[0].upper() + spoken[1:]
    pieces = [Piece(spoken, pos, end)]
    if key == "St.":
        # "Street" before a capital ends its sentence ("Main St. Then"); "Saint" never does.
        keep = spoken == "Street" and (
            ends_sentence(text, end) or _CAPITAL_AFTER.match(text, end) is not None
        )
    else:
        keep = _keep_period(key, text, end)
    if keep:
        pieces.append(Piece(".", end - 1, end, attach=True))
    return Match(pos, end, tuple(pieces), "abbreviation")
