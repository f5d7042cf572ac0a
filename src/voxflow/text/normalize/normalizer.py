"""Text normalization: written form -> spoken form, with a map back to the original.

espeak-ng reads some written forms badly ("$3.50" -> "dollar three point five zero"), so text
is rewritten into words before it is phonemized: numbers, money, dates, times, units,
abbreviations, acronyms, URLs and symbols (the rules and their decisions for ambiguous input
are documented in ``normalize_numeric``, ``normalize_datetime``, ``normalize_times`` and
``normalize_words``).

Each language is a table (``_Grammar``): its rules in priority order, what joins the pieces of
a reading (English a space, Japanese nothing: it is written without spaces), the view of the
text its rules read, and the runs copied where no rule applies. English is the default;
Japanese (``voxflow.text.normalize.rules_ja``) rewrites every number into kanji numerals and
kana for the Japanese phonemizer. The span bookkeeping below is the same for both.
Lexicon entries (``voxflow.text.lexicon``) are applied to whole words first and override every
other rule.

Word timestamps must point into the client's original text, so :class:`Normalized` carries
spans from the spoken form back to the source: unchanged text maps character for character; a
replaced token maps every spoken character to the source range it was read from (the whole
token, or a part such as the "22" of "Nov. 22" when the rule reads the parts separately);
separating spaces the normalizer inserts map to the gap between their neighbours' sources.

Punctuation that shapes prosody (``. , ? ! ; :``) and everything the rules do not recognise
pass through unchanged.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from voxflow.text.language import TextLanguage
from voxflow.text.lexicon import Lexicon
from voxflow.text.normalize.abbreviations import abbreviation_rule
from voxflow.text.normalize.acronyms import (
    acronym_rule,
    initialism_rule,
    is_shouting,
    mixed_token_rule,
)
from voxflow.text.normalize.addresses import email_rule, url_rule
from voxflow.text.normalize.base import Context, Match, Piece, Rule
from voxflow.text.normalize.datetime import date_rule, phone_rule
from voxflow.text.normalize.numeric import numeric_rule, range_dash_rule, version_rule
from voxflow.text.normalize.roman import roman_rule
from voxflow.text.normalize.rules_ja import JAPANESE_RULES, fold_width
from voxflow.text.normalize.symbols import symbol_rule
from voxflow.text.normalize.times import ratio_rule, time_range_rule, time_rule

__all__ = [
    "NormalizationMode",
    "Normalized",
    "Normalizer",
    "Override",
    "Span",
    "normalize_lines",
]


class NormalizationMode(StrEnum):
    """ElevenLabs' ``apply_text_normalization``. ``AUTO`` normalizes exactly like ``ON``: we
    have no model that reads written forms well on its own, so "let the system decide" always
    decides to normalize. ``OFF`` leaves the text untouched."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


@dataclass(frozen=True)
class Span:
    """``text[out_start:out_end]`` of the spoken form came from ``source[src_start:src_end]``.

    ``copied`` spans hold text copied unchanged, character for character (their two ranges
    have the same length); in any other span every output character maps to the whole source
    range. A source range may be empty for inserted separators.
    """

    out_start: int
    out_end: int
    src_start: int
    src_end: int
    copied: bool = False


@dataclass(frozen=True)
class Normalized:
    """A spoken form, the original it was made from, and the map between them.

    ``spans`` are ordered, cover ``text`` exactly, and their source ranges never move
    backwards (both ends are non-decreasing).
    """

    text: str
    source: str
    spans: tuple[Span, ...]

    @classmethod
    def identity(cls, text: str) -> Normalized:
        """``text`` unchanged, mapped 1:1."""
        spans = (Span(0, len(text), 0, len(text), copied=True),) if text else ()
        return cls(text, text, spans)

    def _source_point(self, span: Span, out: int) -> int:
        if span.copied:
            return span.src_start + (out - span.out_start)
        return span.src_start if out <= span.out_start else span.src_end

    def to_source(self, out_start: int, out_end: int) -> tuple[int, int]:
        """The original range that produced ``text[out_start:out_end]``.

        A range inside copied text maps character for character; a range touching a replaced
        token maps to (at least) that token's whole source. An empty range maps to the empty
        source range at the corresponding position.
        """
        if not 0 <= out_start <= out_end <= len(self.text):
            raise ValueError(
                f"range {out_start}..{out_end} is outside the spoken text (0..{len(self.text)})"
            )
        if not self.spans:
            return (0, 0)
        starts = [span.out_start for span in self.spans]
        first = max(0, bisect.bisect_right(starts, out_start) - 1)
        if out_start == out_end:
            point = self._source_point(self.spans[first], out_start)
            return (point, point)
        last = max(first, bisect.bisect_left(starts, out_end) - 1)
        head, tail = self.spans[first], self.spans[last]
        src_start = head.src_start
        if head.copied:
            src_start += out_start - head.out_start
        src_end = tail.src_end
        if tail.copied:
            src_end = tail.src_start + (out_end - tail.out_start)
        return (src_start, max(src_start, src_end))


@dataclass(frozen=True)
class Override:
    """``source[start:end]`` is spoken as ``spoken``, whatever the rules and the lexicon say:
    SSML's ``<sub>``, ``<phoneme>`` and ``<say-as>``. Every spoken character maps to the whole
    written range, so the range is timed as one word."""

    start: int
    end: int
    spoken: str


class _Builder:
    """Accumulates the spoken form and its spans, merging neighbours of the same kind.

    ``separator`` joins the pieces of a reading, and a replacement to a word it would touch
    ("R&D" -> "R and D"); an empty one joins nothing (Japanese)."""

    def __init__(self, source: str, separator: str = " ") -> None:
        self._source = source
        self._separator_text = separator
        self._parts: list[str] = []
        self._spans: list[Span] = []
        self._length = 0

    def _add(self, text: str, src_start: int, src_end: int, copied: bool) -> None:
        if not text:
            return
        out_start, out_end = self._length, self._length + len(text)
        last = self._spans[-1] if self._spans else None
        if last is not None and (
            (copied and last.copied and last.src_end == src_start)
            or (
                not copied
                and not last.copied
                and (last.src_start, last.src_end) == (src_start, src_end)
            )
        ):
            self._spans[-1] = Span(last.out_start, out_end, last.src_start, src_end, copied)
        else:
            self._spans.append(Span(out_start, out_end, src_start, src_end, copied))
        self._parts.append(text)
        self._length = out_end

    def _last_char(self) -> str:
        return self._parts[-1][-1] if self._parts else ""

    def _glue(self, next_text: str, at: int) -> None:
        """A space between a replacement and a neighbouring word that it would otherwise touch
        ("R&D" -> "R and D")."""
        if not self._separator_text:
            return
        if self._last_char().isalnum() and next_text[:1].isalnum():
            self._add(self._separator_text, at, at, copied=False)

    def copy(self, start: int, end: int) -> None:
        text = self._source[start:end]
        if self._spans and not self._spans[-1].copied:
            self._glue(text, start)
        self._add(text, start, end, copied=True)

    def emit(self, match: Match) -> None:
        previous: Piece | None = None
        for piece in match.pieces:
            if previous is None:
                self._glue(piece.text, match.start)
            elif not piece.attach:
                self._separator(previous, piece)
            self._add(piece.text, piece.start, piece.end, copied=self._is_copy(piece))
            previous = piece

    def _is_copy(self, piece: Piece) -> bool:
        return piece.end - piece.start == len(piece.text) and (
            self._source[piece.start : piece.end] == piece.text
        )

    def _separator(self, before: Piece, after: Piece) -> None:
        separator = self._separator_text
        if before.end <= after.start:
            gap = self._source[before.end : after.start]
            self._add(separator, before.end, after.start, copied=gap == separator)
        else:
            self._add(separator, before.start, after.end, copied=False)

    def build(self) -> Normalized:
        return Normalized("".join(self._parts), self._source, tuple(self._spans))


# Rules in priority order: the first that matches at a position wins. Specific shapes come
# before general ones (an e-mail address before a URL, a phone number or date before a range,
# a number before an abbreviation, an abbreviation before an acronym).
_RULES: tuple[Rule, ...] = (
    email_rule,
    url_rule,
    phone_rule,
    date_rule,
    time_rule,
    ratio_rule,
    version_rule,
    time_range_rule,
    range_dash_rule,
    numeric_rule,
    abbreviation_rule,
    initialism_rule,
    roman_rule,
    acronym_rule,
    mixed_token_rule,
    symbol_rule,
)

_WORD_RUN = re.compile(r"[^\W_]+")
_COMPOUND = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*")
_TOKEN = re.compile(r"\S+")
_CLOSERS = ",;:!?\"')]}”’»"
_POSSESSIVE = ("'s", "’s")


def _lexicon_candidates(text: str, pos: int) -> list[tuple[str, int]]:
    """Ways to read a whole word at ``pos``, longest first: the whitespace token without
    closing punctuation (for entries such as "C++"), the same without a final period, a
    hyphen/apostrophe compound, and the plain letter/digit run."""
    candidates: list[tuple[str, int]] = []
    token = _TOKEN.match(text, pos)
    if token is not None:
        end = token.end()
        while end > pos and text[end - 1] in _CLOSERS:
            end -= 1
        candidates.append((text[pos:end], end))
        if end > pos + 1 and text[end - 1] == ".":
            candidates.append((text[pos : end - 1], end - 1))
    for pattern in (_COMPOUND, _WORD_RUN):
        found = pattern.match(text, pos)
        if found is not None:
            candidates.append((found.group(), found.end()))
    unique: list[tuple[str, int]] = []
    for word, end in sorted(candidates, key=lambda item: -item[1]):
        if word and (word, end) not in unique:
            unique.append((word, end))
    return unique


def _lexicon_match(lexicon: Lexicon, text: str, pos: int) -> Match | None:
    if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] in "_'’"):
        return None
    if not (text[pos].isalnum() or text[pos] in "#$€£@.&+-"):
        return None
    for word, end in _lexicon_candidates(text, pos):
        if end < len(text) and (text[end].isalnum() or text[end] == "_"):
            continue
        entry = lexicon.lookup(word)
        if entry is not None:
            return Match(pos, end, (Piece(entry.spoken, pos, end),), "lexicon")
        if word.endswith(_POSSESSIVE):
            base = lexicon.lookup(word[:-2])
            if base is not None and base.respelling is not None:
                return Match(pos, end, (Piece(base.spoken + word[-2:], pos, end),), "lexicon")
    return None


def _rules_apply(text: str, pos: int) -> bool:
    # Rules start only where a token can start, never inside a run of letters and digits.
    return pos == 0 or not (text[pos - 1].isalnum() and text[pos].isalnum())


def _anywhere(text: str, pos: int) -> bool:
    """Japanese has no spaces to start tokens at: a number may follow any letter (人は3人);
    its rules see to it themselves that they never start inside a number."""
    del text, pos
    return True


def _same(text: str) -> str:
    return text


def _never(text: str) -> bool:
    del text
    return False


@dataclass(frozen=True)
class _Grammar:
    """How one language's text is normalized (see the module docstring).

    ``view(text)`` is what the rules read and has ``text``'s length, character for character,
    so that every offset indexes the written text (copied text is taken from the written
    text, not the view). ``run`` matches text copied in one step where no rule matched;
    ``rules_apply(view, pos)`` says where rules are tried."""

    rules: tuple[Rule, ...]
    separator: str
    view: Callable[[str], str]
    shouting: Callable[[str], bool]
    run: re.Pattern[str]
    rules_apply: Callable[[str, int], bool]


_GRAMMARS: dict[TextLanguage, _Grammar] = {
    TextLanguage.ENGLISH: _Grammar(_RULES, " ", _same, is_shouting, _WORD_RUN, _rules_apply),
    # Letters without digits: a copy stops before a number (人は3人).
    TextLanguage.JAPANESE: _Grammar(
        JAPANESE_RULES, "", fold_width, _never, re.compile(r"[^\W\d_]+"), _anywhere
    ),
}


class Normalizer:
    """Turns written text of one language (English unless told) into the words a TTS voice
    should say. Thread-safe; the optional lexicon is applied before every other rule (its
    entries are English words: in Japanese text they apply to a word that stands apart).

    Results are remembered (``MEMO_ENTRIES`` texts, least recently used out first): agents say
    the same segments again and again, and the rules cost 0.05 to 0.3 ms a segment (with its
    length), a tenth of a phrase cache hit's whole time to first audio. A ``Normalized`` is
    immutable, so one result serves every caller."""

    MEMO_ENTRIES = 4096
    MEMO_MAX_CHARS = 512  # longer texts are not remembered (a segment is at most 300 spoken)

    def __init__(
        self, lexicon: Lexicon | None = None, language: TextLanguage = TextLanguage.ENGLISH
    ) -> None:
        self._lexicon = lexicon if lexicon else None
        self._language = TextLanguage(language)
        self._grammar = _GRAMMARS[self._language]
        self._memo: OrderedDict[tuple[str, NormalizationMode, tuple[Override, ...]], Normalized] = (
            OrderedDict()
        )
        self._memo_lock = threading.Lock()
        self._siblings: dict[TextLanguage, Normalizer] = {}

    @property
    def lexicon(self) -> Lexicon | None:
        return self._lexicon

    @property
    def language(self) -> TextLanguage:
        return self._language

    def with_lexicon(self, lexicon: Lexicon | None) -> Normalizer:
        """A normalizer of this one's language whose lexicon is this one's merged with
        ``lexicon`` (which wins)."""
        if not lexicon:
            return self
        if self._lexicon is None:
            return Normalizer(lexicon, self._language)
        return Normalizer(self._lexicon.merged(lexicon), self._language)

    def for_language(self, language: TextLanguage) -> Normalizer:
        """A normalizer of ``language`` with this one's lexicon: this one for its own language,
        else the same object on every call, so its remembered results serve every context of
        that language."""
        if language is self._language:
            return self
        with self._memo_lock:
            sibling = self._siblings.get(language)
            if sibling is None:
                sibling = Normalizer(self._lexicon, language)
                self._siblings[language] = sibling
            return sibling

    def normalize(
        self,
        text: str,
        mode: NormalizationMode = NormalizationMode.AUTO,
        overrides: tuple[Override, ...] = (),
    ) -> Normalized:
        """The spoken form of ``text`` with its map back; ``OFF`` returns ``text`` as is but
        for ``overrides`` (ordered, not overlapping, inside ``text``), which apply in every
        mode."""
        mode = NormalizationMode(mode)
        if mode is NormalizationMode.OFF and not overrides:
            return Normalized.identity(text)
        if len(text) > self.MEMO_MAX_CHARS:
            return self._normalize(text, mode, overrides)
        key = (text, mode, overrides)
        with self._memo_lock:
            known = self._memo.get(key)
            if known is not None:
                self._memo.move_to_end(key)
                return known
        normalized = self._normalize(text, mode, overrides)
        with self._memo_lock:
            self._memo[key] = normalized
            if len(self._memo) > self.MEMO_ENTRIES:
                self._memo.popitem(last=False)
        return normalized

    def _normalize(
        self, text: str, mode: NormalizationMode, overrides: tuple[Override, ...]
    ) -> Normalized:
        grammar = self._grammar
        view = grammar.view(text)
        context = Context(text=view, shouting=grammar.shouting(view))
        builder = _Builder(text, grammar.separator)
        previous: Match | None = None
        pending = list(reversed(overrides))
        rules = mode is not NormalizationMode.OFF
        pos = 0
        while pos < len(text):
            limit = pending[-1].start if pending else len(text)
            if pos == limit and pending:
                override = pending.pop()
                match: Match | None = Match(
                    pos, override.end, (Piece(override.spoken, pos, override.end),), "ssml"
                )
            elif rules and grammar.rules_apply(view, pos):
                match = self._match(context, pos, previous)
                if match is not None and match.end > limit:
                    match = None  # a rule may not read into an override's text
            else:
                match = None
            if match is not None and match.end > pos:
                builder.emit(match)
                previous = match
                pos = match.end
                continue
            run = grammar.run.match(view, pos)
            end = run.end() if run is not None else pos + 1
            builder.copy(pos, min(end, limit) if limit > pos else end)
            pos = min(end, limit) if limit > pos else end
        return builder.build()

    def _match(self, context: Context, pos: int, previous: Match | None) -> Match | None:
        if self._lexicon is not None:
            match = _lexicon_match(self._lexicon, context.text, pos)
            if match is not None:
                return match
        for rule in self._grammar.rules:
            match = rule(context, pos, previous)
            if match is not None:
                return match
        return None


def normalize_lines(lines: Iterable[str], normalizer: Normalizer) -> Iterator[str]:
    """The spoken form of each line (line endings removed), for ``voxflow normalize``."""
    for line in lines:
        yield normalizer.normalize(line.rstrip("\r\n")).text
