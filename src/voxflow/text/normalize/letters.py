"""Letters, for the word rules: spelling a token out, vowels, and where a token may start.

Shared by the acronym, abbreviation and address rules, which all decide between reading a token
as a word and saying its letters one by one.
"""

from __future__ import annotations

from voxflow.text.normalize.datetime import spell_letter

__all__ = ["VOWELS", "spell", "starts_token"]

# A token without any of these cannot be read as a word, so it is spelled.
VOWELS = frozenset("AEIOUYaeiouy")


def spell(letters: str) -> str:
    """Letters said one by one: "FBI" -> "F B I" ("A" is respelled, see ``spell_letter``)."""
    return " ".join(spell_letter(char) for char in letters)


def starts_token(text: str, pos: int) -> bool:
    """Whether a word token may start at ``pos``: not inside a word, a number or a dotted
    name ("example.com" must not match a rule at "com")."""
    return pos == 0 or not (text[pos - 1].isalnum() or text[pos - 1] in "_.")
