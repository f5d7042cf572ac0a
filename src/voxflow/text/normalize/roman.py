"""Normalizer rule for Roman numerals after a name or a numbered noun.

Decisions for ambiguous input: Roman numerals (I, V and X only) are read after words such as
"War", "Chapter", "Part" ("World War II" -> "World War two") and after other capitalised words
when two or more letters long ("Rocky III"); after a monarch's or pope's name they are ordinals
("Elizabeth II" -> "Elizabeth the second"). A one-letter numeral is read only after a numbered
noun ("Part I"): anywhere else "I" is far more likely the pronoun.
"""

from __future__ import annotations

import re

from voxflow.text.normalize.acronyms import COMMON_WORDS
from voxflow.text.normalize.base import Context, Match, is_right_edge, whole
from voxflow.text.normalize.numbers import cardinal, ordinal

__all__ = ["roman_rule"]

_ROMAN = re.compile(r"X{0,3}(?:IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10}
_NUMBERED_NOUNS = frozenset(
    {
        "War", "Chapter", "Part", "Volume", "Vol", "Act", "Scene", "Phase", "Type", "Class",
        "Level", "Title", "Article", "Section", "Book", "Episode", "Stage", "Tier", "Grade",
        "Category", "Appendix", "Round", "Season", "Unit", "Schedule",
    }
)  # fmt: skip
_REGNAL_NAMES = frozenset(
    {
        "Henry", "Louis", "Elizabeth", "George", "Edward", "Charles", "William", "James", "Richard",
        "John", "Mary", "Philip", "Pius", "Benedict", "Leo", "Gregory", "Innocent", "Clement",
        "Paul", "Napoleon", "Frederick", "Peter", "Catherine", "Alexander", "Nicholas", "Ivan",
        "Felipe", "Juan", "Carlos", "Victor", "Emmanuel", "Ludwig", "Wilhelm", "Gustav", "Olav",
        "Harald", "Rama", "Constantine", "Ramesses", "Ptolemy", "Cleopatra", "Urban", "Boniface",
        "Alfonso", "Ferdinand", "Francis",
    }
)  # fmt: skip
_WORD_BEFORE = re.compile(r"([A-Za-z]+)\.?[ \u00a0]+$")


def _roman_value(numeral: str) -> int:
    total = 0
    for index, char in enumerate(numeral):
        value = _ROMAN_VALUES[char]
        following = numeral[index + 1 : index + 2]
        if following and _ROMAN_VALUES[following] > value:
            total -= value
        else:
            total += value
    return total


def roman_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Roman numerals after a name or a numbered noun ("World War II", "Henry VIII")."""
    del prev
    text = ctx.text
    if pos == 0 or text[pos - 1] not in " \u00a0":
        return None
    found = _ROMAN.match(text, pos)
    if found is None or not found.group() or not is_right_edge(text, found.end()):
        return None
    if found.end() < len(text) and text[found.end()] in "'’":
        return None
    numeral = found.group()
    before = _WORD_BEFORE.search(text, max(0, pos - 32), pos)
    if before is None:
        return None
    word = before.group(1)
    value = _roman_value(numeral)
    if word in _REGNAL_NAMES and len(numeral) >= 2:
        return whole(f"the {ordinal(value)}", pos, found.end(), "number")
    if word in _NUMBERED_NOUNS:
        return whole(cardinal(value), pos, found.end(), "number")
    # Any other capitalised name: "Rocky II" (but not "An IV", whose "An" is no name).
    is_name = word[0].isupper() and word[1:].islower() and word.lower() not in COMMON_WORDS
    if len(numeral) >= 2 and is_name:
        return whole(cardinal(value), pos, found.end(), "number")
    return None
