"""Each text language's boundary rules, and the written words they find.

English words are separated by whitespace; Japanese is written without spaces, and its rules
(``voxflow.text.segment_ja``) also find where a phrase (bunsetsu) ends from the script. A word
start is the first character after any boundary, of whatever kind: the places where a stream
may be cut, or one rendering of a sentence may hand over to another (``voxflow.session.pieces``).
"""

from __future__ import annotations

from voxflow.text.language import TextLanguage
from voxflow.text.segment import ENGLISH_BOUNDARIES, BoundaryRules, find_boundaries
from voxflow.text.segment_ja import JAPANESE_BOUNDARIES

__all__ = ["boundary_rules", "next_word_end", "skip_space", "word_starts"]

_RULES: dict[TextLanguage, BoundaryRules] = {
    TextLanguage.ENGLISH: ENGLISH_BOUNDARIES,
    TextLanguage.JAPANESE: JAPANESE_BOUNDARIES,
}


def boundary_rules(language: TextLanguage) -> BoundaryRules:
    """The rules that find ``language``'s sentence, clause and word boundaries."""
    return _RULES[language]


def word_starts(text: str, language: TextLanguage) -> list[int]:
    """Where each written word of the complete ``text`` starts after its first, in increasing
    order: the first non-space character after each boundary (for English, after each
    whitespace run; for Japanese, also after each phrase end and clause mark)."""
    # Strictly increasing as the boundaries are: each follows a non-space character.
    starts = (
        skip_space(text, boundary.pos)
        for boundary in find_boundaries(text, final=False, rules=_RULES[language])
    )
    return [start for start in starts if start < len(text)]


def next_word_end(text: str, start: int, language: TextLanguage, limit: int) -> int | None:
    """Where the written word that follows ``start`` ends (whitespace before it skipped; a
    Japanese phrase): the first boundary after it that ``text`` confirms within ``limit``
    characters of ``start``. None when there is none there, so a word still arriving (or one
    longer than that) is never taken for a whole one."""
    window = text[start : start + limit]
    for boundary in find_boundaries(window, final=False, rules=_RULES[language]):
        if window[: boundary.pos].strip():
            return start + boundary.pos
    return None


def skip_space(text: str, position: int) -> int:
    """The first position at or after ``position`` that holds no whitespace (or the end)."""
    while position < len(text) and text[position].isspace():
        position += 1
    return position
