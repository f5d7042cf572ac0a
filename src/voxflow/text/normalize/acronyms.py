"""Normalizer rules for tokens said letter by letter: acronyms, dotted initialisms and mixed
letter/digit tokens.

Decisions for ambiguous input:

* An all-caps token of 2-5 letters is spelled ("FBI" -> "F B I") unless it is in
  ``READ_ACRONYMS`` ("NASA") or is a common English word written in capitals ("STOP", "NEW").
  Longer ones are spelled only when they have no vowel. In text that is mostly capitals
  (shouting) only ``KNOWN_SPELLED`` acronyms and vowel-less tokens are spelled. A plural or
  possessive "s" stays on the last letter ("APIs" -> "A P I's").
* Beside "&" capitals are initials ("AT&T", "R&D"), even when they spell a word.
* In a mixed token ("MP3", "4K") digits are read as a number, capitals are spelled, and
  lower-case letters are read as a word when pronounceable.
"""

from __future__ import annotations

import re

from voxflow.text.normalize.base import Context, Match, Piece, ends_sentence, is_right_edge, whole
from voxflow.text.normalize.letters import VOWELS, spell, starts_token
from voxflow.text.normalize.numbers import number

__all__ = [
    "COMMON_WORDS",
    "KNOWN_SPELLED",
    "READ_ACRONYMS",
    "acronym_rule",
    "initialism_rule",
    "is_shouting",
    "mixed_token_rule",
]

# All-caps acronyms that are said as words. espeak-ng reads these correctly as they are.
READ_ACRONYMS = frozenset(
    {
        "NASA", "NATO", "UNESCO", "UNICEF", "GIF", "JPEG", "SCUBA", "LASER", "RADAR", "SONAR",
        "FIFA", "UEFA", "OPEC", "COVID", "AIDS", "ASCII", "IKEA", "LEGO", "NASDAQ", "SWAT", "SIM",
        "PIN", "RAM", "ROM", "LAN", "WAN", "MIDI", "NIMBY", "YOLO", "FOMO", "SARS", "MERS", "FEMA",
        "OSHA", "NAFTA", "ASEAN", "DARPA", "CERN", "NOAA", "AWOL", "ANSI", "POTUS", "SCOTUS",
        "UNIX", "LINUX", "CAPTCHA", "WASP", "ZIP", "DOS", "TESOL", "JSON", "YAML", "GUI", "PAC",
        "TEDX", "TED", "NAND", "BASIC", "COBOL", "FORTRAN", "SQL",
    }
)  # fmt: skip
# Spelled even in shouted text, where other all-caps words are taken as words.
KNOWN_SPELLED = frozenset(
    {
        "FBI", "CIA", "NSA", "USA", "UK", "EU", "UN", "US", "USB", "HTML", "CSS", "CEO", "CFO",
        "CTO", "COO", "API", "URL", "CPU", "GPU", "PDF", "FAQ", "DIY", "TV", "BBC", "CNN", "NBA",
        "NFL", "NHL", "MLB", "IBM", "HP", "AI", "ML", "VR", "AR", "PC", "ID", "DNA", "RNA", "IRS",
        "DMV", "ATM", "UFO", "UPS", "PS", "VIP", "NYC", "LA", "DC", "MIT", "UCLA", "ASAP", "RSVP",
        "TBD", "FYI", "ETA", "DJ", "MC", "OMG", "LOL", "BTW", "IT", "IP", "TCP", "UDP", "HTTP",
        "HTTPS", "SSH", "SSL", "TLS", "DNS", "VPN", "SMS", "MMS", "GPS", "LED", "LCD", "OLED", "HD",
        "UHD", "CD", "DVD", "AC",
    }
)  # fmt: skip
# Common English words that are written in capitals for emphasis and must not be spelled.
# "US" and "WHO" are not among them: in capitals they are nearly always the country and the
# agency.
COMMON_WORDS = frozenset(
    {
        "a", "am", "an", "and", "any", "are", "as", "ask", "at", "away", "be", "bad", "best", "big",
        "but", "by", "buy", "call", "can", "car", "cat", "cold", "come", "cool", "cut", "day",
        "did", "do", "does", "dog", "done", "down", "each", "eat", "end", "even", "ever", "fast",
        "few", "find", "fine", "fire", "first", "for", "free", "from", "fun", "get", "give", "go",
        "god", "good", "got", "great", "had", "half", "has", "hat", "have", "he", "help", "her",
        "here", "hey", "hi", "him", "his", "hit", "hold", "home", "hot", "how", "huge", "if", "in",
        "into", "is", "its", "job", "just", "keep", "key", "kid", "kill", "know", "last", "late",
        "left", "less", "let", "lie", "life", "like", "line", "live", "long", "look", "lost", "lot",
        "love", "low", "made", "main", "make", "man", "many", "may", "me", "mean", "meet", "men",
        "mind", "more", "most", "move", "much", "must", "my", "near", "need", "never", "new",
        "next", "nice", "no", "none", "nor", "not", "note", "now", "odd", "of", "off", "oh", "ok",
        "okay", "old", "on", "once", "one", "only", "open", "or", "our", "out", "over", "own",
        "paid", "part", "pay", "play", "plus", "post", "pull", "push", "put", "quit", "read",
        "real", "red", "rest", "rich", "ride", "right", "road", "rule", "run", "sad", "safe",
        "said", "sale", "same", "save", "saw", "say", "see", "seen", "sell", "send", "set", "she",
        "shop", "show", "shut", "sick", "side", "sign", "size", "slow", "so", "some", "soon",
        "sorry", "stay", "step", "still", "stop", "such", "sure", "take", "talk", "team", "tell",
        "than", "that", "the", "them", "then", "they", "this", "time", "tip", "to", "too", "top",
        "true", "try", "turn", "two", "up", "upon", "use", "very", "vote", "wait", "walk",
        "want", "war", "warm", "was", "way", "we", "well", "went", "were", "what", "when",
        "why", "wide", "will", "win", "wish", "with", "won", "word", "work", "wow", "yes", "yet",
        "you", "your", "zero", "zone", "please", "always", "today", "again", "other", "these",
        "those", "there", "their", "about", "after", "before", "while", "where", "which", "whose",
        "wrong", "alert", "urgent", "thanks", "thank", "hello", "break", "news", "final", "total",
        "value", "world", "money", "price",
    }
)  # fmt: skip

_INITIALISM = re.compile(r"(?:[A-Za-z]\.){2,}|(?:[A-Za-z]\.)+[A-Za-z](?![A-Za-z])")
_ACRONYM = re.compile(r"([A-Z]{2,})('s|’s|s)?")
_MIXED = re.compile(r"(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]+")
_MIXED_PART = re.compile(r"[A-Za-z]+|\d+")


def is_shouting(text: str) -> bool:
    """Whether the text is mostly capitals, so that its all-caps words are ordinary words."""
    upper = sum(1 for char in text if char.isupper())
    lower = sum(1 for char in text if char.islower())
    caps_words = sum(1 for word in re.findall(r"[A-Za-z]{2,}", text) if word.isupper())
    return caps_words >= 3 and upper > 3 * lower


def initialism_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Dotted initialisms: "U.S." -> "U S", "U.S.A." -> "U S eigh"."""
    del prev
    text = ctx.text
    if not starts_token(text, pos):
        return None
    found = _INITIALISM.match(text, pos)
    if found is None or not is_right_edge(text, found.end()):
        return None
    letters = [char for char in found.group() if char.isalpha()]
    spoken = spell("".join(letters).upper())
    pieces = [Piece(spoken, pos, found.end())]
    if found.group().endswith(".") and ends_sentence(text, found.end()):
        pieces.append(Piece(".", found.end() - 1, found.end(), attach=True))
    return Match(pos, found.end(), tuple(pieces), "initialism")


def _spell_acronym(word: str, shouting: bool) -> bool:
    if word in READ_ACRONYMS:
        return False
    vowel_less = not any(char in VOWELS for char in word)
    if shouting:
        return word in KNOWN_SPELLED or vowel_less
    if word.lower() in COMMON_WORDS and word not in KNOWN_SPELLED:
        return False
    return len(word) <= 5 or vowel_less or word in KNOWN_SPELLED


def acronym_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """All-caps tokens: spelled letter by letter unless they are read as words."""
    del prev
    text = ctx.text
    if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] == "_"):
        return None
    found = _ACRONYM.match(text, pos)
    if found is None or not is_right_edge(text, found.end()):
        return None
    word = found.group(1)
    # Beside "&" capitals are initials ("AT&T", "R&D"), even when they spell a word.
    ampersand = text[found.end() : found.end() + 1] == "&" or text[pos - 1 : pos] == "&"
    if word == "OK" or not (ampersand or _spell_acronym(word, ctx.shouting)):
        return None
    suffix = "'s" if found.group(2) else ""
    return whole(spell(word) + suffix, pos, found.end(), "acronym")


def mixed_token_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Tokens mixing letters and digits, read piece by piece: "MP3" -> "M P three"."""
    del prev
    text = ctx.text
    if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] == "_"):
        return None
    found = _MIXED.match(text, pos)
    if found is None or not is_right_edge(text, found.end()):
        return None
    pieces: list[Piece] = []
    for part in _MIXED_PART.finditer(text, pos, found.end()):
        token = part.group()
        unpronounceable = len(token) == 1 or not any(c in VOWELS for c in token)
        if token.isdigit():
            spoken = number(token)
        elif (token.isupper() and token not in READ_ACRONYMS) or (
            token.islower() and unpronounceable
        ):
            spoken = spell(token)
        else:
            spoken = token
        pieces.append(Piece(spoken, part.start(), part.end()))
    return Match(pos, found.end(), tuple(pieces), "mixed")
