"""English sentence, clause and word boundary detection.

A boundary is a place where text may be cut before it is spoken. ``Boundary.pos`` is the index
just after the last character of the text before it (its punctuation included); the whitespace
that follows belongs to the gap between segments, so the segment before is ``text[:pos]``.

Invariants:

* Boundaries only sit at whitespace runs: ``text[pos - 1]`` is not whitespace and ``text[pos]``
  is. Every whitespace run that follows some non-space text yields exactly one boundary, of the
  strongest kind that applies (``WORD`` at least), so boundaries are strictly increasing.
* A boundary is reported only once the first non-space character after its whitespace run is
  present, because that character confirms or refutes it ("etc. and" versus "etc. The").
  The one exception is a clause mark (``, ; :``, optionally followed by closing quotes) followed
  by a space or tab: nothing after that space can change it, so it is reported as ``CLAUSE`` as
  soon as the space arrives (a streamed "orchestra, " need not wait for the next word). With
  ``final=True`` the end of input stands in for the confirming character: the end of the text
  is a ``SENTENCE`` boundary when the text holds any non-space character.
* Classification reads at most ``LOOKBEHIND`` characters before a boundary, plus its whitespace
  run and the one character after it. Hence results are prefix-stable: for every prefix ``p`` of
  ``t``, ``find_boundaries(p, False)`` equals the boundaries of ``find_boundaries(t, False)``
  whose ``pos < len(p.rstrip())``, plus the early clause boundary at ``len(p.rstrip())`` when
  ``p`` ends with one; nothing else at or after that position is decided yet.
  ``BoundaryScanner`` relies on this to report the same boundaries however text is split.

These are English rules. Another language's rules (``voxflow.text.segment_ja``) are a
``BoundaryRules`` value with the same invariants (their own positions, not necessarily at
whitespace); ``find_boundaries`` and ``BoundaryScanner`` take one, English by default.

Rules (a "terminator" is a run of ``. ! ? …``, optionally followed by closing quotes/brackets):

* Blank line (two or more newlines in a whitespace run): always ``SENTENCE``.
* ``!`` or ``?`` in the terminator: ``SENTENCE`` before any letter, digit or opening quote,
  except that after a closing quote a lowercase word is a dialogue tag (``"Run!" he said``).
* ``.`` or an ellipsis: ``SENTENCE`` only before an uppercase (or caseless) letter, a digit, an
  opening quote/bracket, a currency sign or a bullet; never before a lowercase letter, so
  "wait... what", "etc. and" and "3 p.m. today" do not split.
* A lone ``.`` directly after a word is not a sentence end when the word is a title (Dr, Mr,
  Mrs, Ms, Prof, St, ... never, even before a capital), a continuation abbreviation (e.g., i.e.,
  vs., cf., viz. never), a number-introducing abbreviation (No., Fig., Vol., p., approx., month
  names such as Jan. ...) before a digit, a single capital initial before a letter
  (J. R. R. Tolkien), or a list marker of one to three digits that starts a line or follows
  terminal punctuation or a colon ("Steps: 1. Open it. 2. Close it.").
* Every other abbreviation is a sentence end before a capital: "etc. The", "Inc. The",
  "U.S. The" and "3 p.m. Then" split. This favours prompt speech; the rare miss merely puts a
  cut after an abbreviation that was mid-sentence.
* Dots, colons and commas inside a token (3.14, $3.50, 1,000, 3:30, URLs, e-mail addresses,
  file names, v1.2.3) never produce boundaries because no whitespace follows them.
* ``CLAUSE``: ``, ; :`` (optionally followed by closing quotes) before whitespace (before a
  space or tab it stays ``CLAUSE`` even if a blank line follows in the same run); a spaced
  dash token (hyphen, ``--``, en dash or em dash) after a word on the same line; a word ending
  in an em dash or ``--``; and a single newline after text, which upgrades a weaker boundary.
"""

import enum
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "ENGLISH_BOUNDARIES",
    "LOOKBEHIND",
    "Boundary",
    "BoundaryKind",
    "BoundaryRules",
    "BoundaryScanner",
    "find_boundaries",
    "terminator_span",
]

LOOKBEHIND = 64
"""Characters before a boundary that its classification may read."""

# Trimming the scanner's retained text costs a copy, so it is done in chunks of at least this.
_TRIM_CHUNK = 1024


class BoundaryKind(enum.IntEnum):
    """How strong a boundary is; a higher value is a stronger place to cut."""

    WORD = 1
    CLAUSE = 2
    SENTENCE = 3


@dataclass(frozen=True)
class Boundary:
    """A possible cut: ``text[:pos]`` ends with the word or punctuation before the cut."""

    pos: int
    kind: BoundaryKind


@dataclass(frozen=True)
class BoundaryRules:
    """One language's boundary rules, as ``find_boundaries`` and ``BoundaryScanner`` use them.

    ``scan(text, lo)``: the decided boundaries of ``text`` at or after ``lo`` (0, or a position
    just after a non-space character), in increasing order, none at or past the end of the
    text's non-space content except one decided early (whatever may follow). It must be
    prefix-stable in the sense of this module's docstring, reading at most ``LOOKBEHIND``
    characters before a boundary.

    ``ends_sentence(text, end)``: whether ``text[:end]`` (which ends with a non-space character)
    ends a sentence if the most likely next word followed (for English, one starting with a
    capital), reading at most ``LOOKBEHIND`` characters before ``end``.
    """

    scan: Callable[[str, int], list[Boundary]]
    ends_sentence: Callable[[str, int], bool]


_GAP = re.compile(r"\s+")
_CONTENT = re.compile(r"\S")

_TERMINATORS = frozenset(".!?…")
_CLOSERS = frozenset(
    (
        *"\"')]}»",
        "\N{RIGHT DOUBLE QUOTATION MARK}",
        "\N{RIGHT SINGLE QUOTATION MARK}",
        "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}",
    )
)
_OPENERS = "".join(
    (
        "\"'([{«¿¡",
        "\N{LEFT DOUBLE QUOTATION MARK}",
        "\N{LEFT SINGLE QUOTATION MARK}",
        "\N{SINGLE LEFT-POINTING ANGLE QUOTATION MARK}",
    )
)
_CLAUSE_MARKS = frozenset(",;:")
_EN_DASH = "\N{EN DASH}"
_EM_DASH = "\N{EM DASH}"
_BULLETS = frozenset(("•", "*", "-", "#", _EN_DASH, _EM_DASH))
_DASH_TOKENS = frozenset({"-", "--", "---", _EN_DASH, _EM_DASH})

_TITLES = frozenset(
    {
        "mr", "mrs", "ms", "mx", "dr", "prof", "st", "mt", "ft", "rev", "hon", "gen", "col",
        "capt", "lt", "sgt", "gov", "sen", "rep", "pres", "fr", "messrs", "mme", "mlle", "supt",
    }
)  # fmt: skip
_CONTINUATIONS = frozenset({"e.g", "i.e", "eg", "ie", "vs", "cf", "viz"})
_NUMBER_PREFIXES = frozenset(
    {
        "no", "nos", "nr", "fig", "figs", "vol", "vols", "p", "pp", "ch", "chap", "sec", "sect",
        "art", "eq", "eqn", "ref", "approx", "ca", "ext", "tel", "pt", "pts", "op", "jan", "feb",
        "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    }
)  # fmt: skip


def find_boundaries(text: str, final: bool, rules: BoundaryRules | None = None) -> list[Boundary]:
    """Return every decided boundary in ``text`` in increasing ``pos`` order, by ``rules``
    (None: ``ENGLISH_BOUNDARIES``).

    With ``final=False`` a boundary that the text after it could still change is withheld (for
    English, one whose whitespace run reaches the end of ``text``). With ``final=True`` the text
    is complete: the end of its non-space content is a ``SENTENCE`` boundary.
    """
    found = (ENGLISH_BOUNDARIES if rules is None else rules).scan(text, 0)
    if final:
        end = len(text.rstrip())
        if found and found[-1].pos == end:
            found.pop()  # an early clause boundary at the very end: the end is stronger
        if end:
            found.append(Boundary(end, BoundaryKind.SENTENCE))
    return found


class BoundaryScanner:
    """Incremental ``find_boundaries(..., final=False, rules)`` over a growing stream of text.

    Positions are offsets into the concatenation of everything fed. Each call to ``feed`` costs
    time proportional to the new text plus the whitespace run and ``LOOKBEHIND`` characters before
    it, never the whole stream. Text before ``release``'s mark is dropped once it can no longer be
    read by the classification of a future boundary.
    """

    def __init__(self, rules: BoundaryRules | None = None) -> None:
        """``rules``: the language's boundary rules (None: ``ENGLISH_BOUNDARIES``)."""
        self._rules = ENGLISH_BOUNDARIES if rules is None else rules
        self._text = ""
        self._base = 0  # stream offset of self._text[0]
        self._settled = 0  # every boundary with pos < settled has been reported
        self._reported = 0  # the last position reported (early boundaries sit at `settled`)
        self._released = 0  # the caller no longer reads text before this offset

    @property
    def end(self) -> int:
        """Length of the whole stream fed so far."""
        return self._base + len(self._text)

    @property
    def settled(self) -> int:
        """Offset just past the last non-space character fed; boundaries before it are final."""
        return self._settled

    def feed(self, piece: str) -> list[Boundary]:
        """Append ``piece`` and return the boundaries it confirmed, in order."""
        if not piece:
            return []
        lo = self._settled - self._base
        self._text += piece
        stripped = piece.rstrip()
        if stripped:
            self._settled = self.end - (len(piece) - len(stripped))
        # Whitespace alone does not move the settled point, but may complete an early clause.
        found = [
            Boundary(self._base + b.pos, b.kind)
            for b in self._rules.scan(self._text, lo)
            if self._base + b.pos > self._reported
        ]
        if found:
            self._reported = found[-1].pos
        self._trim()
        return found

    def text(self, start: int, end: int) -> str:
        """Return ``stream[start:end]``; ``start`` must not precede the released mark."""
        if start < self._base or end > self.end or start > end:
            raise ValueError(f"range {start}:{end} is not retained ({self._base}:{self.end})")
        return self._text[start - self._base : end - self._base]

    def find_content(self, start: int) -> int | None:
        """Offset of the first non-space character at or after ``start``, or None."""
        if start < self._base:
            raise ValueError(f"offset {start} is no longer retained (from {self._base})")
        found = _CONTENT.search(self._text, start - self._base)
        return None if found is None else self._base + found.start()

    def sentence_at_end(self) -> Boundary | None:
        """The end of the settled text as a ``SENTENCE`` boundary, if it would be one before the
        most likely next word (``BoundaryRules.ends_sentence``; for English a capital letter):
        what the next word most likely confirms. None for "Dr.", "e.g.", an initial, a list
        marker, or text that ends without a terminator."""
        end = self._settled - self._base
        if end <= 0:
            return None
        if self._rules.ends_sentence(self._text, end):
            return Boundary(self._settled, BoundaryKind.SENTENCE)
        return None

    def release(self, upto: int) -> None:
        """Declare that the caller will not read text before ``upto`` again."""
        self._released = max(self._released, upto)
        self._trim()

    def _trim(self) -> None:
        # Future boundaries lie at or after `settled`, and their lookbehind must stay readable.
        keep = min(self._released, self._settled - LOOKBEHIND)
        if keep - self._base >= _TRIM_CHUNK:
            self._text = self._text[keep - self._base :]
            self._base = keep


def _scan(text: str, lo: int) -> list[Boundary]:
    """Boundaries of whitespace runs that start at or after ``lo`` and are followed by text.

    ``lo`` must be 0 or a position just after a non-space character.
    """
    found: list[Boundary] = []
    size = len(text)
    for gap in _GAP.finditer(text, lo):
        start, end = gap.span()
        if start == 0:
            continue  # leading whitespace ends no word
        if end == size:
            if _early_clause(text, start):
                found.append(Boundary(start, BoundaryKind.CLAUSE))
            break
        found.append(Boundary(start, _classify(text, start, end)))
    return found


def _ends_sentence(text: str, end: int) -> bool:
    """Whether ``text[:end]`` ends a sentence before a capital letter."""
    floor = max(0, end - LOOKBEHIND)
    return _punctuation_kind(text, floor, end, "A") is BoundaryKind.SENTENCE


def _early_clause(text: str, start: int) -> bool:
    """A clause mark before a space or tab at ``start``: ``CLAUSE`` whatever follows."""
    if text[start] not in " \t":
        return False
    floor = max(0, start - LOOKBEHIND)
    closed = start
    while closed > floor and text[closed - 1] in _CLOSERS:
        closed -= 1
    return closed > floor and text[closed - 1] in _CLAUSE_MARKS


def _classify(text: str, start: int, end: int) -> BoundaryKind:
    """Kind of the boundary at ``start``, a whitespace run ending before ``text[end]``."""
    if _early_clause(text, start):
        return BoundaryKind.CLAUSE
    newlines = text.count("\n", start, end)
    if newlines >= 2:
        return BoundaryKind.SENTENCE
    floor = max(0, start - LOOKBEHIND)
    kind = _punctuation_kind(text, floor, start, text[end])
    if newlines == 1:
        return max(kind, BoundaryKind.CLAUSE)
    return kind


def terminator_span(
    text: str, floor: int, pos: int, terminators: frozenset[str], closers: frozenset[str]
) -> tuple[int, int]:
    """``(run, closed)``: the run of ``terminators`` that ends at ``closed``, itself followed up
    to ``pos`` by ``closers`` (closing quotes and brackets), not reading before ``floor``;
    ``run == closed`` when no terminator stands there."""
    closed = pos
    while closed > floor and text[closed - 1] in closers:
        closed -= 1
    run = closed
    while run > floor and text[run - 1] in terminators:
        run -= 1
    return run, closed


def _punctuation_kind(text: str, floor: int, pos: int, following: str) -> BoundaryKind:
    run, closed = terminator_span(text, floor, pos, _TERMINATORS, _CLOSERS)
    if run < closed:
        terminator = text[run:closed]
        quoted = closed < pos
        if not _terminator_ends_sentence(terminator, quoted, following):
            return BoundaryKind.WORD
        if terminator == "." and not quoted and _is_non_terminal(text, floor, run, following):
            return BoundaryKind.WORD
        return BoundaryKind.SENTENCE
    if closed > floor and text[closed - 1] in _CLAUSE_MARKS:
        return BoundaryKind.CLAUSE
    if _is_dash_clause(text, floor, pos):
        return BoundaryKind.CLAUSE
    return BoundaryKind.WORD


def _terminator_ends_sentence(terminator: str, quoted: bool, following: str) -> bool:
    """Whether the character after a terminator lets it end a sentence (abbreviations aside)."""
    if "!" in terminator or "?" in terminator:
        if following.islower():
            return not quoted  # after a closing quote, a lowercase word is a dialogue tag
        return _opens_sentence(following)
    return not following.islower() and _opens_sentence(following)


def _is_non_terminal(text: str, floor: int, period: int, following: str) -> bool:
    """Whether the word before a lone period at ``period`` keeps the sentence going."""
    word_start = _token_start(text, floor, period)
    word = text[word_start:period].lstrip(_OPENERS)
    lowered = word.lower()
    if lowered in _TITLES or lowered in _CONTINUATIONS:
        return True
    if lowered in _NUMBER_PREFIXES and following.isdigit():
        return True
    if len(word) == 1 and word.isupper() and following.isalpha():
        return True  # an initial: "John F. Kennedy"
    return (
        0 < len(word) <= 3
        and word.isascii()
        and word.isdigit()
        and _starts_item(text, floor, word_start)
    )


def _starts_item(text: str, floor: int, word_start: int) -> bool:
    """Whether a number at ``word_start`` opens a line or sentence, making it a list marker."""
    pos = word_start
    while pos > floor and text[pos - 1].isspace():
        if text[pos - 1] == "\n":
            return True
        pos -= 1
    if pos == floor:
        return True
    if text[pos - 1] == ":":
        return True
    while pos > floor and text[pos - 1] in _CLOSERS:
        pos -= 1
    return pos > floor and text[pos - 1] in _TERMINATORS


def _is_dash_clause(text: str, floor: int, pos: int) -> bool:
    token = text[_token_start(text, floor, pos) : pos]
    if token in _DASH_TOKENS:
        # A spaced dash needs a word before it on the same line; otherwise it is a bullet.
        before = pos - len(token)
        while before > floor and text[before - 1] in " \t":
            before -= 1
        return before > floor and not text[before - 1].isspace()
    return token.endswith((_EM_DASH, "--")) and bool(token.strip("-" + _EM_DASH))


def _token_start(text: str, floor: int, pos: int) -> int:
    while pos > floor and not text[pos - 1].isspace():
        pos -= 1
    return pos


def _opens_sentence(char: str) -> bool:
    if char.isalpha():
        return not char.islower()
    if char.isdigit() or char in _OPENERS or char in _BULLETS:
        return True
    return unicodedata.category(char) == "Sc"


ENGLISH_BOUNDARIES = BoundaryRules(scan=_scan, ends_sentence=_ends_sentence)
"""English boundaries: the rules of this module's docstring."""
