"""Japanese sentence, clause and word boundary detection.

Japanese is written without spaces between words, so a boundary may sit between any two
characters. ``Boundary.pos`` keeps its meaning (``voxflow.text.segment``): the segment before
the cut is ``text[:pos]``, and whitespace after ``pos`` (Japanese text may hold some, around
Latin words or after a sentence) belongs to the gap between segments.

Invariants (those of ``voxflow.text.segment``, which ``BoundaryScanner`` and ``TextBuffer`` rely
on, with positions between characters as well as at whitespace):

* A boundary follows a non-space character: ``text[pos - 1]`` is not whitespace. Each position
  yields at most one boundary, of the strongest kind that applies, so boundaries are strictly
  increasing; inside and at the end of a whitespace run there is none.
* A boundary is reported only once the first non-space character at or after ``pos`` is present
  (it confirms or refutes it: "。」" moves the end after the bracket, "3," may be "3,000").
  Nothing is decided early: a clause mark at the very end of the text waits for the next
  character like everything else (a closing bracket could still follow it). With
  ``final=True`` the end of the text's non-space content is a ``SENTENCE`` boundary.
* Classification reads at most ``LOOKBEHIND`` characters before a boundary, plus the
  whitespace run after it and the one non-space character after that. Hence results are
  prefix-stable: for every prefix ``p`` of ``t``, ``find_boundaries(p, False,
  JAPANESE_BOUNDARIES)`` equals the boundaries of the same call on ``t`` whose
  ``pos < len(p.rstrip())``.

Rules (a "terminator" is a run of ``。！？!?…‥`` or periods ``.．``, optionally followed by
closing brackets and quotes ``」』）”`` and the like, which belong to the sentence they close):

* Blank line (two or more newlines in a whitespace run): ``SENTENCE``; a single newline makes a
  boundary at least ``CLAUSE``.
* A terminator ends a sentence before anything but more of it, except:

  - a quotation closed by a bracket and followed by the quotative ``と`` or ``って``
    ("「はい。」と言った") is a ``WORD`` boundary;
  - an ASCII terminator directly followed by ASCII text ("example.com", "Yahoo!JAPAN",
    "?q=1") or a period between digits ("1.5", "１．５") is none;
  - a period after a list number at the start of a line ("1. 準備") is a ``WORD`` boundary;
  - before whitespace, a period or a quoted terminator keeps English's habit of not ending a
    sentence before a lowercase Latin word ("etc. and").

* ``CLAUSE``: ``、，；：`` and ASCII ``, ; :`` (optionally followed by closing quotes), except a
  mark between two digits ("1,000", "3：30") and an ASCII mark directly followed by ASCII text
  ("a,b", "https://").
* ``WORD`` where a phrase (bunsetsu) plausibly ends, told from the script alone (no
  morphological analysis): after a hiragana character (a particle or okurigana: "会議を",
  "確認して") directly followed by a kanji, a katakana letter, a Latin letter, a digit or an
  opening bracket; and at every whitespace run. A hiragana ``お``/``ご`` before a kanji is a
  prefix ("お手伝い", "ご連絡"), not an ending, and a single hiragana between two kanji is
  okurigana inside a compound ("問い合わせ", "申し込み") unless it is a particle ("会議を確認",
  "東京に行く"): no boundary. So there is never a boundary inside a kanji run, a katakana run
  (``ー`` and ``・`` included), a Latin word or a number.
"""

# Japanese is written with full-width punctuation; the docstrings and comments quote it.
# ruff: noqa: RUF002, RUF003

from __future__ import annotations

from voxflow.text.segment import (
    LOOKBEHIND,
    Boundary,
    BoundaryKind,
    BoundaryRules,
    terminator_span,
)

__all__ = ["JAPANESE_BOUNDARIES", "is_hiragana", "is_kanji", "is_katakana"]

_PERIODS = frozenset(".．")
_TERMINATORS = frozenset("。｡！？!?…‥.．")
_CLOSERS = frozenset("」』）〕］｝〉》】〙〗｣”’\"')]}»")
_OPENERS = frozenset("「『（〔［｛〈《【〘〖｢“‘([{")
_CLAUSE_MARKS = frozenset("、､，；：,;:")
_QUOTATIVE = frozenset("とっ")  # 「…」と言った, 「…」って
_PREFIXES = frozenset("おご")  # honorific prefixes: お手伝い, ご連絡
# Particles a single hiragana between two kanji may be; any other is okurigana (問い合わせ).
_PARTICLES = frozenset("はがをにでのともへやか")
# Katakana-block marks that continue a word rather than start one.
_WORD_MARKS = frozenset("ー・ヽヾ")
# What may end the text before a boundary that no whitespace follows (a hiragana may too):
# scanning skips the positions after any other character.
_CANDIDATE_ENDS = _TERMINATORS | _CLOSERS | _CLAUSE_MARKS

# The character the most likely next word starts with, for ``ends_sentence``: a kanji.
_LIKELY_NEXT = "\N{CJK UNIFIED IDEOGRAPH-6B21}"  # 次


def is_hiragana(char: str) -> bool:
    """Whether ``char`` is a hiragana letter or iteration mark."""
    return "\u3041" <= char <= "\u309f"


def is_katakana(char: str) -> bool:
    """Whether ``char`` is a katakana letter or mark, full- or half-width (``ー`` included)."""
    return (
        "\u30a0" <= char <= "\u30ff" or "\u31f0" <= char <= "\u31ff" or "\uff66" <= char <= "\uff9f"
    )


def is_kanji(char: str) -> bool:
    """Whether ``char`` is a CJK ideograph or a mark written as one (``々 〆 〇 ヶ``)."""
    return (
        "\u4e00" <= char <= "\u9fff"
        or "\u3400" <= char <= "\u4dbf"
        or "\uf900" <= char <= "\ufaff"
        or char in "々〆〇ヶ"
    )


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9" or "\uff10" <= char <= "\uff19"


def _is_latin_or_digit(char: str) -> bool:
    """ASCII or full-width letters and digits."""
    return (
        (char.isascii() and char.isalnum())
        or "\uff10" <= char <= "\uff19"
        or "\uff21" <= char <= "\uff3a"
        or "\uff41" <= char <= "\uff5a"
    )


def _starts_word(char: str) -> bool:
    """Whether a word that a hiragana ending may precede starts with ``char``."""
    if char in _WORD_MARKS:
        return False
    return is_kanji(char) or is_katakana(char) or _is_latin_or_digit(char) or char in _OPENERS


def _scan(text: str, lo: int) -> list[Boundary]:
    """Boundaries at positions from ``lo`` (0 or just after a non-space character) whose
    confirming character is present: every one before the end of the non-space content."""
    found: list[Boundary] = []
    end = len(text)
    while end > lo and text[end - 1].isspace():  # not rstrip: a feed reads only its new text
        end -= 1
    pos = max(lo, 1)
    while pos < end:
        before = text[pos - 1]
        if before.isspace():
            pos += 1
            continue
        if text[pos].isspace():
            following = pos + 1
            while text[following].isspace():  # `pos < end`: content follows the run
                following += 1
            found.append(Boundary(pos, _classify_gap(text, pos, following)))
            pos = following + 1
            continue
        if before in _CANDIDATE_ENDS or is_hiragana(before):
            kind = _classify_adjacent(text, pos)
            if kind is not None:
                found.append(Boundary(pos, kind))
        pos += 1
    return found


def _classify_gap(text: str, pos: int, following: int) -> BoundaryKind:
    """Kind of the boundary at ``pos``, a whitespace run ending before ``text[following]``."""
    newlines = text.count("\n", pos, following)
    if newlines >= 2:
        return BoundaryKind.SENTENCE
    floor = max(0, pos - LOOKBEHIND)
    kind = _punctuation_kind(text, floor, pos, text[following], gap=True) or BoundaryKind.WORD
    if newlines == 1:
        return max(kind, BoundaryKind.CLAUSE)
    return kind


def _classify_adjacent(text: str, pos: int) -> BoundaryKind | None:
    """Kind of the boundary between ``text[pos - 1]`` and ``text[pos]`` (neither a space), or
    None when there is none."""
    floor = max(0, pos - LOOKBEHIND)
    following = text[pos]
    kind = _punctuation_kind(text, floor, pos, following, gap=False)
    if kind is not None:
        return kind
    before = text[pos - 1]
    if not (is_hiragana(before) and before not in _PREFIXES and _starts_word(following)):
        return None
    if before not in _PARTICLES and is_kanji(following) and pos >= 2 and is_kanji(text[pos - 2]):
        return None  # okurigana inside a compound: 問い合わせ, 申し込み
    return BoundaryKind.WORD


def _punctuation_kind(
    text: str, floor: int, pos: int, following: str, gap: bool
) -> BoundaryKind | None:
    """The boundary punctuation before ``pos`` makes, with ``following`` the next non-space
    character (directly at ``pos`` unless ``gap``); None when the punctuation makes none."""
    run, closed = terminator_span(text, floor, pos, _TERMINATORS, _CLOSERS)
    if run < closed:
        if not gap and (following in _TERMINATORS or following in _CLOSERS):
            return None  # the terminator (or its closing brackets) goes on
        return _terminator_kind(text, floor, run, closed, pos, following, gap)
    if closed > floor and text[closed - 1] in _CLAUSE_MARKS:
        if not gap and closed == pos:
            mark = text[closed - 1]
            if _is_digit(following) and closed - 2 >= floor and _is_digit(text[closed - 2]):
                return None  # 1,000  3：30
            if mark.isascii() and following.isascii():
                return None  # a,b  https://
        return BoundaryKind.CLAUSE
    return None


def _terminator_kind(
    text: str, floor: int, run: int, closed: int, pos: int, following: str, gap: bool
) -> BoundaryKind | None:
    """The boundary after the terminator ``text[run:closed]`` and its closers up to ``pos``."""
    terminator = text[run:closed]
    quoted = closed < pos
    if not gap and terminator.isascii() and not quoted and following.isascii():
        return None  # example.com, Yahoo!JAPAN, 1.5
    periods = all(char in _PERIODS for char in terminator)
    if periods and not quoted:
        if not gap and _is_digit(following) and run > floor and _is_digit(text[run - 1]):
            return None  # １．５
        if _is_list_marker(text, floor, run):
            return BoundaryKind.WORD
    if gap and following.isascii() and following.islower() and (periods or quoted):
        return BoundaryKind.WORD  # "etc. and", a dialogue tag after a quoted "Stop!"
    if quoted and following in _QUOTATIVE:
        return BoundaryKind.WORD
    return BoundaryKind.SENTENCE


def _is_list_marker(text: str, floor: int, period: int) -> bool:
    """Whether the period at ``period`` follows a number of one to three digits that starts a
    line (or the text): "1. 準備" lists an item rather than ending a sentence."""
    start = period
    while start > floor and _is_digit(text[start - 1]):
        start -= 1
    if not 0 < period - start <= 3:
        return False
    while start > floor and text[start - 1] in " \t\u3000":
        start -= 1
    return start == floor or text[start - 1] == "\n"


def _ends_sentence(text: str, end: int) -> bool:
    """Whether ``text[:end]`` ends a sentence before a Japanese word."""
    floor = max(0, end - LOOKBEHIND)
    kind = _punctuation_kind(text, floor, end, _LIKELY_NEXT, gap=False)
    return kind is BoundaryKind.SENTENCE


JAPANESE_BOUNDARIES = BoundaryRules(scan=_scan, ends_sentence=_ends_sentence)
"""Japanese boundaries: the rules of this module's docstring."""
