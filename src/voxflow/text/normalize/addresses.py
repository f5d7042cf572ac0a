"""Normalizer rules for web and e-mail addresses.

Decisions for ambiguous input: URLs drop their scheme ("https://"), read "." as "dot", "/" as
"slash", and spell labels that are not pronounceable ("www", "io", "ai"); a trailing slash is
not said. Trailing punctuation belongs to the sentence, not to the address, unless it closes a
bracket opened inside it. Mailbox names are read as words unless they have no vowel.
"""

from __future__ import annotations

import re

from voxflow.text.normalize.base import Context, Match, Piece
from voxflow.text.normalize.letters import VOWELS, spell, starts_token
from voxflow.text.normalize.numbers import digits, number

__all__ = ["email_rule", "url_rule"]

_URL = re.compile(
    r"(?:(?:https?|ftp)://|www\.)[^\s<>\"'`]+"
    r"|(?:[A-Za-z0-9-]+\.)+(?:com|org|net|edu|gov|io|ai|dev|app|co|us|uk|info|biz|me|tv|xyz"
    r"|tech|ly)(?![A-Za-z0-9-])(?:/[^\s<>\"'`]*)?",
    re.IGNORECASE,
)
_SCHEME = re.compile(r"(?:https?|ftp)://", re.IGNORECASE)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_URL_TRAILING = ".,;:!?)]}'\""
_URL_PART = re.compile(r"[A-Za-z]+|\d+|.", re.DOTALL)
_URL_SYMBOLS = {
    ".": "dot",
    "/": "slash",
    "-": "dash",
    "_": "underscore",
    ":": "colon",
    "?": "question mark",
    "=": "equals",
    "&": "and",
    "#": "hash",
    "%": "percent",
    "~": "tilde",
    "+": "plus",
    "@": "at",
}
# Short labels that are said as words, not spelled.
_SHORT_WORDS = frozenset(
    {
        "co", "me", "go", "to", "do", "my", "no", "on", "in", "at", "is", "it", "we", "be", "by",
        "up", "so", "hi", "ok",
    }
)  # fmt: skip


def _label(word: str) -> str:
    """A URL or e-mail label: said as a word when pronounceable, else spelled."""
    lower = word.lower()
    if lower in _SHORT_WORDS:
        return lower
    if lower == "www" or len(lower) <= 2 or not any(char in VOWELS for char in lower):
        return spell(lower)
    return lower


def _address_pieces(text: str, start: int, end: int) -> list[Piece]:
    pieces: list[Piece] = []
    for part in _URL_PART.finditer(text, start, end):
        token = part.group()
        if token.isalpha():
            spoken = _label(token)
        elif token.isdigit():
            spoken = number(token) if len(token) <= 4 else digits(token)
        else:
            spoken = _URL_SYMBOLS.get(token, "")
        if spoken:
            pieces.append(Piece(spoken, part.start(), part.end()))
    return pieces


def _trim(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1] in _URL_TRAILING:
        # A closing bracket that has its opener inside the URL belongs to it.
        if text[end - 1] == ")" and text.count("(", start, end) >= text.count(")", start, end):
            break
        end -= 1
    return end


def url_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Web addresses: "https://example.com/path" -> "example dot com slash path"."""
    del prev
    text = ctx.text
    if not starts_token(text, pos):
        return None
    found = _URL.match(text, pos)
    if found is None:
        return None
    end = _trim(text, pos, found.end())
    scheme = _SCHEME.match(text, pos, end)
    body = scheme.end() if scheme else pos
    pieces = _address_pieces(text, body, end)
    # A trailing slash is noise when said aloud.
    if len(pieces) > 1 and pieces[-1].text == "slash":
        pieces.pop()
    if not pieces:
        return None
    return Match(pos, end, tuple(pieces), "url")


def email_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """E-mail addresses: "jane.doe@example.com" -> "jane dot doe at example dot com"."""
    del prev
    text = ctx.text
    if not starts_token(text, pos):
        return None
    found = _EMAIL.match(text, pos)
    if found is None:
        return None
    end = _trim(text, pos, found.end())
    at = text.index("@", pos, end)
    local: list[Piece] = []
    for part in _URL_PART.finditer(text, pos, at):
        token = part.group()
        if token.isalpha():
            # A mailbox name is usually a name or a word: read it, spell only what cannot be.
            spoken = token.lower() if any(c in VOWELS for c in token) else spell(token.lower())
        elif token.isdigit():
            spoken = digits(token)
        else:
            spoken = _URL_SYMBOLS.get(token, "")
        if spoken:
            local.append(Piece(spoken, part.start(), part.end()))
    pieces = [*local, Piece("at", at, at + 1), *_address_pieces(text, at + 1, end)]
    return Match(pos, end, tuple(pieces), "email")
