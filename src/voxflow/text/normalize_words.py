"""Normalizer rules for words and symbols: URLs, e-mail addresses, abbreviations, initialisms,
acronyms, Roman numerals, mixed letter/digit tokens and stand-alone symbols.

Decisions for ambiguous input:

* An all-caps token of 2-5 letters is spelled ("FBI" -> "F B I") unless it is in
  ``READ_ACRONYMS`` ("NASA") or is a common English word written in capitals ("STOP", "NEW").
  Longer ones are spelled only when they have no vowel. In text that is mostly capitals
  (shouting) only ``KNOWN_SPELLED`` acronyms and vowel-less tokens are spelled. A plural or
  possessive "s" stays on the last letter ("APIs" -> "A P I's").
* "Dr." is always "Doctor" (the "Drive" reading is out of scope). "St." is "Street" after a
  number or ordinal ("42nd St.") or after a capitalised word that does not open the sentence
  ("Main St."), "Saint" before a capitalised word ("Visit St. Louis"), and "Street" otherwise.
* "No.", "Fig.", "Vol.", "p." and friends are expanded only before a number ("No. 5" -> "number
  five"); otherwise they are words or the end of a sentence.
* An abbreviation's period that also ends the text (or, for "etc.", comes before a capital) is
  kept after the expansion so the sentence still ends there; titles never end a sentence.
* Roman numerals (I, V and X only) are read after words such as "War", "Chapter", "Part"
  ("World War II" -> "World War two") and after other capitalised words when two or more
  letters long ("Rocky III"); after a monarch's or pope's name they are ordinals ("Elizabeth
  II" -> "Elizabeth the second").
* URLs drop their scheme ("https://"), read "." as "dot", "/" as "slash", and spell labels that
  are not pronounceable ("www", "io", "ai").
"""

from __future__ import annotations

import re

from voxflow.text.normalize_base import (
    Context,
    Match,
    Piece,
    ends_sentence,
    is_right_edge,
    whole,
)
from voxflow.text.normalize_datetime import spell_letter
from voxflow.text.normalize_numbers import cardinal, digits, number, ordinal

__all__ = [
    "COMMON_WORDS",
    "KNOWN_SPELLED",
    "READ_ACRONYMS",
    "abbreviation_rule",
    "acronym_rule",
    "email_rule",
    "is_shouting",
    "mixed_token_rule",
    "roman_rule",
    "spell",
    "symbol_rule",
    "url_rule",
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

_INITIALISM = re.compile(r"(?:[A-Za-z]\.){2,}|(?:[A-Za-z]\.)+[A-Za-z](?![A-Za-z])")
_ACRONYM = re.compile(r"([A-Z]{2,})('s|’s|s)?")
_VOWELS = frozenset("AEIOUYaeiouy")

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
_MIXED = re.compile(r"(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]+")
_MIXED_PART = re.compile(r"[A-Za-z]+|\d+")


def spell(letters: str) -> str:
    """Letters said one by one: "FBI" -> "F B I" ("A" is respelled, see ``spell_letter``)."""
    return " ".join(spell_letter(char) for char in letters)


def is_shouting(text: str) -> bool:
    """Whether the text is mostly capitals, so that its all-caps words are ordinary words."""
    upper = sum(1 for char in text if char.isupper())
    lower = sum(1 for char in text if char.islower())
    caps_words = sum(1 for word in re.findall(r"[A-Za-z]{2,}", text) if word.isupper())
    return caps_words >= 3 and upper > 3 * lower


def _left_ok(text: str, pos: int) -> bool:
    return pos == 0 or not (text[pos - 1].isalnum() or text[pos - 1] in "_.")


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
    if not _left_ok(text, pos):
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


def initialism_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Dotted initialisms: "U.S." -> "U S", "U.S.A." -> "U S eigh"."""
    del prev
    text = ctx.text
    if not _left_ok(text, pos):
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
    vowel_less = not any(char in _VOWELS for char in word)
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


def _label(word: str) -> str:
    """A URL or e-mail label: said as a word when pronounceable, else spelled."""
    lower = word.lower()
    if lower in _SHORT_WORDS:
        return lower
    if lower == "www" or len(lower) <= 2 or not any(char in _VOWELS for char in lower):
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
    if not _left_ok(text, pos):
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
    if not _left_ok(text, pos):
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
            spoken = token.lower() if any(c in _VOWELS for c in token) else spell(token.lower())
        elif token.isdigit():
            spoken = digits(token)
        else:
            spoken = _URL_SYMBOLS.get(token, "")
        if spoken:
            local.append(Piece(spoken, part.start(), part.end()))
    pieces = [*local, Piece("at", at, at + 1), *_address_pieces(text, at + 1, end)]
    return Match(pos, end, tuple(pieces), "email")


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
        unpronounceable = len(token) == 1 or not any(c in _VOWELS for c in token)
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
