"""Shared types of the normalizer's rules: what a rule sees and what it produces.

A rule looks at the text at one position and either declines (``None``) or returns a
:class:`Match`: where the matched source ends and the spoken :class:`Piece` s that replace it.
Each piece names the source range it was read from, so the normalizer can map every spoken
character back to the original text. Pieces are joined with single spaces unless a piece says
it ``attach`` es to the one before (punctuation such as a date's comma).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "OPENERS",
    "Context",
    "Match",
    "Piece",
    "Rule",
    "ends_sentence",
    "is_left_edge",
    "is_right_edge",
    "next_word",
    "prev_word",
    "whole",
]

# Characters that may directly precede a token that starts a new word ("($5", "'90s", "[1st").
OPENERS = frozenset(" \t\n\r\f\v([{\"'“‘«/")

_WORD_BEFORE = re.compile(r"([^\W\d_]+)\.?[\s\"'“”‘’(]*$")
_WORD_AFTER = re.compile(r"[\s\"'“”‘’(]*([^\W\d_]+)")
_SENTENCE_END = re.compile(r"[\"'”’)\]}]*\s*$")


@dataclass(frozen=True)
class Piece:
    """Spoken text read from ``source[start:end]``."""

    text: str
    start: int
    end: int
    attach: bool = False


@dataclass(frozen=True)
class Match:
    """A rule's reading of ``source[start:end]``; ``kind`` lets the next rule see what it was
    (a range dash reads the number after it as a year when the one before was a year)."""

    start: int
    end: int
    pieces: tuple[Piece, ...]
    kind: str = ""


@dataclass(frozen=True)
class Context:
    """The whole text being normalized plus facts about it that rules share."""

    text: str
    # Mostly upper-case text is shouting: its all-caps words are words, not acronyms.
    shouting: bool


Rule = Callable[[Context, int, Match | None], Match | None]


def whole(text: str, start: int, end: int, kind: str = "") -> Match:
    """A match whose spoken ``text`` maps, as one piece, to the whole source range."""
    return Match(start, end, (Piece(text, start, end),), kind)


def is_left_edge(text: str, pos: int) -> bool:
    """Whether a token may start at ``pos``: start of text, or after a space or an opener."""
    return pos == 0 or text[pos - 1] in OPENERS


def is_right_edge(text: str, pos: int) -> bool:
    """Whether a token may end at ``pos``: end of text or anything but a letter or digit (a
    period followed by a digit is a decimal point, so it does not end a number)."""
    if pos >= len(text):
        return True
    char = text[pos]
    if char.isalnum() or char == "_":
        return False
    return not (char in ".," and text[pos + 1 : pos + 2].isdigit())


def prev_word(text: str, pos: int) -> str:
    """The alphabetic word just before ``pos`` (lower-cased), or "" when none is adjacent."""
    found = _WORD_BEFORE.search(text, 0, pos)
    return found.group(1).lower() if found else ""


def next_word(text: str, pos: int) -> str:
    """The alphabetic word just after ``pos`` (case kept), or ""."""
    found = _WORD_AFTER.match(text, pos)
    return found.group(1) if found else ""


def ends_sentence(text: str, pos: int) -> bool:
    """Whether only closing quotes, brackets and whitespace follow ``pos``."""
    return _SENTENCE_END.match(text, pos) is not None
