"""SSML as it streams: marked-up text in, chunk by chunk; the spoken text and its controls out.

``SsmlReader.feed(chunk)`` takes the next chunk of a document (an LLM token, a message) and
returns what is complete so far; ``end()`` returns the rest and checks that every element was
closed. A tag, an entity or the content of a ``<sub>``, ``<phoneme>`` or ``<say-as>`` that a
chunk leaves unfinished is held until a later chunk completes it, so nothing is ever cut inside
one.

Invariant: for every split of a document into chunks, the items of all ``feed`` calls and
``end``, with adjacent ``Text`` items joined, are the items of ``feed(document)`` + ``end()``;
a malformed document raises ``SsmlError`` for every split, at the same offset.

Offsets (``start``) count characters of the *written text*: the document with its markup left
out and its entities read (``&amp;`` is one character, ``&``). That is the text the agent wrote,
which word timings index whatever the markup says is spoken.

Items:

* ``Text``: written text spoken as it is written (then normalized as any text);
* ``Say``: one written unit spoken otherwise, timed as one word over all its sound: a ``<sub>``
  (its ``alias``), a ``<phoneme>`` (its phonemes and alphabet), or a ``<say-as>`` (how to read
  it: ``interpret_as`` and ``format``);
* ``Break``: a pause, in milliseconds (``time`` wins over ``strength``), at most ``max_break_ms``;
* ``Style``: the speaking rate and volume from here on, as factors of the context's own, each
  time a ``<prosody>`` opens or closes (nested prosody multiplies);
* ``Boundary``: the end of a ``<p>`` or ``<s>``: a sentence ends there whatever the punctuation.

``<speak>`` and ``<emphasis>`` are accepted and change nothing. An element this reader does not
know is spoken as its text content, its tags ignored (as the hosted services do). Comments and
an ``<?xml ...?>`` declaration are skipped.

A ``SsmlDialect`` says which elements are markup (the others are unknown elements), the longest
break, and whether text may hold a bare ``&`` or ``<`` (``lenient``: a ``&`` that starts no
entity and a ``<`` that starts no tag are text, as an LLM writes "AT&T" or "x < 5"). Cartesia's
inline tags are a dialect too: ``<speed ratio="..."/>`` and ``<volume ratio="..."/>`` set the
rate and volume from there on, and ``<spell>`` is ``<say-as interpret-as="characters">``.

A chunk that raises ``SsmlError`` changes nothing: the reader is as it was before it, so the
client may send the chunk again, corrected.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

__all__ = [
    "CARTESIA_TAGS",
    "MAX_BREAK_MS",
    "SSML",
    "Boundary",
    "Break",
    "ReaderState",
    "Say",
    "SsmlDialect",
    "SsmlError",
    "SsmlItem",
    "SsmlReader",
    "Style",
    "Text",
    "read_ssml",
    "written_text",
]

MAX_BREAK_MS = 10_000.0
# A tag or entity longer than this is not one: the document is refused rather than held forever.
MAX_MARKUP_CHARS = 2_000
# What a held ``<sub>``, ``<phoneme>`` or ``<say-as>`` may hold before its closing tag.
MAX_HELD_CHARS = 1_000


class SsmlError(ValueError):
    """Malformed markup: ``offset`` is where in the document (markup included) it was found, or
    where in the written text (``written``) for what is wrong with an element's content."""

    def __init__(self, message: str, offset: int, written: bool = False) -> None:
        where = "the written text" if written else "the SSML"
        super().__init__(f"{message} (at character {offset} of {where})")
        self.reason = message
        self.offset = offset


@dataclass(frozen=True)
class Text:
    text: str
    start: int


@dataclass(frozen=True)
class Say:
    written: str
    start: int
    alias: str | None = None  # <sub alias="...">
    phonemes: str | None = None  # <phoneme ph="...">
    alphabet: str | None = None  # ipa, x-cmu or cmu-arpabet
    interpret_as: str | None = None  # <say-as interpret-as="...">
    format: str | None = None  # <say-as format="...">: a date's order ("mdy"), ...


@dataclass(frozen=True)
class Break:
    ms: float


@dataclass(frozen=True)
class Style:
    rate: float  # 1.0: the context's own speed
    volume: float  # a linear gain; 1.0: unchanged


@dataclass(frozen=True)
class Boundary:
    element: str  # "p" or "s"


SsmlItem = Text | Say | Break | Style | Boundary

STANDARD_ELEMENTS = frozenset(
    {"speak", "p", "s", "break", "sub", "phoneme", "say-as", "prosody", "emphasis"}
)


@dataclass(frozen=True)
class SsmlDialect:
    """Which markup a protocol reads (see the module docstring)."""

    elements: frozenset[str] = STANDARD_ELEMENTS
    max_break_ms: float = MAX_BREAK_MS
    lenient: bool = False

    def __post_init__(self) -> None:
        unknown = self.elements - STANDARD_ELEMENTS - _CARTESIA_ELEMENTS
        if unknown:
            raise ValueError(f"no such SSML elements: {_shown(unknown)}")
        if not 0 < self.max_break_ms <= MAX_BREAK_MS:
            raise ValueError(f"max_break_ms must be in (0, {MAX_BREAK_MS:g}]")


_CARTESIA_ELEMENTS = frozenset({"break", "speed", "volume", "spell"})
SSML = SsmlDialect()
"""Standard SSML (the subset in the module docstring), strict XML text."""
CARTESIA_TAGS = SsmlDialect(_CARTESIA_ELEMENTS, lenient=True)
"""Cartesia's inline tags in plain text."""
# Cartesia's documented ranges for its speed and volume ratios.
_CARTESIA_SPEED = (0.6, 1.5)
_CARTESIA_VOLUME = (0.5, 2.0)

_STRENGTH_MS = {
    "none": 0.0,
    "x-weak": 100.0,
    "weak": 250.0,
    "medium": 400.0,
    "strong": 700.0,
    "x-strong": 1000.0,
}
_RATES = {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.6}
# Named volumes as gains (about -inf, -12, -6, 0, +4, +8 dB).
_VOLUMES = {
    "silent": 0.0,
    "x-soft": 0.25,
    "soft": 0.5,
    "medium": 1.0,
    "default": 1.0,
    "loud": 1.6,
    "x-loud": 2.5,
}
_ALPHABETS = frozenset({"ipa", "x-cmu", "cmu-arpabet"})
SAY_AS = frozenset(
    {
        "characters",
        "spell-out",
        "digits",
        "cardinal",
        "ordinal",
        "telephone",
        "date",
        "time",
        "currency",
    }
)
_HELD = frozenset({"sub", "phoneme", "say-as", "spell"})
_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_ENTITY_START = re.compile(r"&[#\w]*")
_NAME = r"[A-Za-z_][\w.:-]*"
_ATTRIBUTE = re.compile(rf"\s*({_NAME})\s*=\s*(?:\"([^\"<]*)\"|'([^'<]*)')")
_OPEN = re.compile(rf"<({_NAME})((?:\s+{_NAME}\s*=\s*(?:\"[^\"<]*\"|'[^'<]*'))*)\s*(/?)>\Z")
_CLOSE = re.compile(rf"</({_NAME})\s*>\Z")
_TIME = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s)\s*\Z")
_PERCENT = re.compile(r"\s*([+-]?)(\d+(?:\.\d+)?)\s*%\s*\Z")
_DECIBELS = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*dB\s*\Z")


@dataclass
class _Element:
    name: str
    attributes: dict[str, str]
    offset: int
    held: list[str]  # the written text of a held element
    start: int  # its written offset
    known: bool = True  # False: an element the dialect does not know


@dataclass(frozen=True)
class ReaderState:
    """A ``SsmlReader``'s state (``checkpoint``)."""

    pending: str
    base: int
    written: int
    open: list[_Element]
    styles: list[Style]


class SsmlReader:
    """One document's reader (see the module docstring)."""

    def __init__(self, dialect: SsmlDialect = SSML) -> None:
        self._dialect = dialect
        self._pending = ""  # an unfinished tag, comment or entity
        self._base = 0  # the document offset of ``_pending`` (or of the next chunk)
        self._written = 0  # written characters so far
        self._open: list[_Element] = []
        self._styles: list[Style] = [Style(1.0, 1.0)]

    @property
    def dialect(self) -> SsmlDialect:
        return self._dialect

    def feed(self, chunk: str) -> list[SsmlItem]:
        """The items that ``chunk`` completes; on ``SsmlError`` the reader is unchanged."""
        saved = self.checkpoint()
        try:
            return self._feed(chunk)
        except SsmlError:
            self.rollback(saved)
            raise

    def checkpoint(self) -> ReaderState:
        """The reader's state, to ``rollback`` to when a caller refuses what a chunk gave."""
        elements = [replace(element, held=list(element.held)) for element in self._open]
        return ReaderState(self._pending, self._base, self._written, elements, list(self._styles))

    def rollback(self, state: ReaderState) -> None:
        self._pending, self._base, self._written = state.pending, state.base, state.written
        self._open = [replace(element, held=list(element.held)) for element in state.open]
        self._styles = list(state.styles)

    def end(self) -> list[SsmlItem]:
        """The end of the document: what is held must be complete, every element closed (a
        lenient dialect speaks an unfinished ``<`` or ``&`` as text)."""
        items: list[SsmlItem] = []
        if self._pending and self._dialect.lenient:
            self._content(self._pending, items)
            self._base += len(self._pending)
            self._pending = ""
        if self._pending:
            raise SsmlError(f"unfinished markup {self._pending[:40]!r}", self._base)
        if self._open:
            element = self._open[-1]
            raise SsmlError(f"<{element.name}> is never closed", element.offset)
        return items

    def _feed(self, chunk: str) -> list[SsmlItem]:
        items: list[SsmlItem] = []
        text = self._pending + chunk
        base = self._base
        position = 0
        while position < len(text):
            first = text[position]
            if first not in "<&":
                end = len(text)
                for mark in "<&":
                    found = text.find(mark, position)
                    if found >= 0:
                        end = min(end, found)
                self._content(text[position:end], items)
                position = end
                continue
            piece = self._markup(text, position, base + position)
            if piece is None:  # unfinished: held for the next chunk
                break
            if not piece:  # a lenient dialect's bare '<' or '&': text
                self._content(first, items)
                position += 1
                continue
            if first == "<":
                self._tag(piece, base + position, items)
            else:
                self._content(_entity(piece, base + position), items)
            position += len(piece)
        self._pending = text[position:]
        self._base = base + position
        return _joined(items)

    def _markup(self, text: str, position: int, offset: int) -> str | None:
        """The tag, comment or entity at ``position`` of ``text``; None if ``text`` ends before
        it does; "" when a lenient dialect reads the character there as text."""
        lenient = self._dialect.lenient
        if lenient and text[position] == "<":
            if position + 1 == len(text):
                return None
            if not (text[position + 1].isalpha() or text[position + 1] in "/!?"):
                return ""
        try:
            piece = _markup_piece(text, position, offset)
            if len(piece or text[position:]) > MAX_MARKUP_CHARS:
                raise SsmlError("markup too long (an unclosed '<' or '&'?)", offset)
            if lenient and piece is not None and piece.startswith("&"):
                _entity(piece, offset)
            if lenient and piece is not None and piece.startswith("<") and not _is_tag(piece):
                return ""
        except SsmlError:
            if lenient:
                return ""
            raise
        return piece

    # -- parts -----------------------------------------------------------------------------------

    def _content(self, text: str, items: list[SsmlItem]) -> None:
        if not text:
            return
        holder = self._holder()
        if holder is not None:
            holder.held.append(text)
            if sum(map(len, holder.held)) > MAX_HELD_CHARS:
                raise SsmlError(f"<{holder.name}> holds too much text", holder.offset)
        else:
            items.append(Text(text, self._written))
        self._written += len(text)

    def _holder(self) -> _Element | None:
        for element in self._open:
            if element.known and element.name in _HELD:
                return element
        return None

    def _tag(self, tag: str, offset: int, items: list[SsmlItem]) -> None:
        if tag.startswith(("<!--", "<?")):
            if tag.startswith("<?") and not tag.endswith("?>"):
                raise SsmlError(f"malformed declaration {tag[:40]!r}", offset)
            return
        closing = _CLOSE.match(tag)
        holder = self._holder()
        if holder is not None and (closing is None or closing.group(1) != holder.name):
            raise SsmlError(f"only text may stand inside <{holder.name}>", offset)
        if closing is not None:
            self._close(closing.group(1), offset, items)
            return
        opening = _OPEN.match(tag)
        if opening is None:
            raise SsmlError(f"malformed tag {tag[:40]!r}", offset)
        name, attributes = opening.group(1), _attributes(opening.group(2), offset)
        known = name in self._dialect.elements
        if not known and self._dialect.lenient:
            return  # a lenient dialect ignores an unknown element's tags, however nested
        element = _Element(name, attributes, offset, [], self._written, known)
        if not known:  # spoken as its text: only its nesting is checked
            if not opening.group(3):
                self._open.append(element)
            return
        if opening.group(3):  # <name/>
            self._empty(element, items)
            return
        self._start(element, items)
        self._open.append(element)

    def _empty(self, element: _Element, items: list[SsmlItem]) -> None:
        if element.name == "break":
            items.append(Break(self._break_ms(element)))
        elif element.name in _HELD:
            raise SsmlError(f"<{element.name}/> has no text to speak", element.offset)
        elif element.name == "prosody":
            self._check_prosody(element)  # an empty prosody changes nothing
        elif element.name in ("speed", "volume"):
            self._set_ratio(element, items)

    def _start(self, element: _Element, items: list[SsmlItem]) -> None:
        if element.name == "break":
            raise SsmlError("<break> must be empty: <break .../>", element.offset)
        if element.name == "prosody":
            rate, volume = self._check_prosody(element)
            outer = self._styles[-1]
            style = Style(outer.rate * rate, outer.volume * volume)
            self._styles.append(style)
            if style != outer:
                items.append(style)
        elif element.name in ("speed", "volume"):
            self._set_ratio(element, items)
        elif element.name in _HELD:
            _check_held(element)

    def _set_ratio(self, element: _Element, items: list[SsmlItem]) -> None:
        """Cartesia's ``<speed ratio>`` and ``<volume ratio>``: the context's own rate or volume
        times the ratio, from here on."""
        low, high = _CARTESIA_SPEED if element.name == "speed" else _CARTESIA_VOLUME
        raw = element.attributes.get("ratio", "")
        try:
            ratio = float(raw)
        except ValueError:
            ratio = math.nan
        if not low <= ratio <= high:
            raise SsmlError(
                f"{element.name} ratio {raw!r}: a number from {low:g} to {high:g}", element.offset
            )
        current = self._styles[-1]
        if element.name == "speed":
            style = Style(ratio, current.volume)
        else:
            style = Style(current.rate, ratio)
        self._styles[-1] = style
        if style != current:
            items.append(style)

    def _close(self, name: str, offset: int, items: list[SsmlItem]) -> None:
        if name not in self._dialect.elements and self._dialect.lenient:
            return
        if not self._open or self._open[-1].name != name:
            expected = f"</{self._open[-1].name}>" if self._open else "no closing tag"
            raise SsmlError(f"</{name}> where {expected} was due", offset)
        element = self._open.pop()
        if not element.known:
            return
        if element.name == "prosody":
            closed = self._styles.pop()
            if self._styles[-1] != closed:
                items.append(self._styles[-1])
        elif element.name in ("p", "s"):
            items.append(Boundary(element.name))
        elif element.name in _HELD:
            written = "".join(element.held)
            if not written.strip():
                raise SsmlError(f"<{element.name}> has no text to speak", element.offset)
            items.append(_say(element, written))

    def _break_ms(self, element: _Element) -> float:
        time = element.attributes.get("time")
        strength = element.attributes.get("strength")
        if time is not None:
            match = _TIME.match(time)
            if match is None:
                raise SsmlError(f"break time {time!r}: expected e.g. 500ms or 1.5s", element.offset)
            ms = float(match.group(1)) * (1.0 if match.group(2) == "ms" else 1000.0)
        elif strength is not None:
            if strength not in _STRENGTH_MS:
                raise SsmlError(
                    f"break strength {strength!r}: one of {_shown(_STRENGTH_MS)}", element.offset
                )
            ms = _STRENGTH_MS[strength]
        else:
            ms = _STRENGTH_MS["medium"]
        limit = self._dialect.max_break_ms
        if ms > limit:
            raise SsmlError(f"break of {ms:g} ms: at most {limit:g} ms", element.offset)
        return ms

    def _check_prosody(self, element: _Element) -> tuple[float, float]:
        rate = _factor(element, "rate", _RATES)
        volume = _factor(element, "volume", _VOLUMES)
        return rate, volume


def read_ssml(document: str, dialect: SsmlDialect = SSML) -> list[SsmlItem]:
    """A whole document's items (``SsmlReader`` fed it in one chunk)."""
    reader = SsmlReader(dialect)
    return _joined([*reader.feed(document), *reader.end()])


def written_text(document: str, dialect: SsmlDialect = SSML) -> str:
    """The written text of a whole document: what word timings and alignments index."""
    return "".join(
        item.text if isinstance(item, Text) else item.written
        for item in read_ssml(document, dialect)
        if isinstance(item, Text | Say)
    )


def _is_tag(piece: str) -> bool:
    return (
        piece.startswith(("<!--", "<?"))
        or _OPEN.match(piece) is not None
        or _CLOSE.match(piece) is not None
    )


def _markup_piece(text: str, position: int, offset: int) -> str | None:
    if text.startswith("<!--", position):
        end = text.find("-->", position + 4)
        return None if end < 0 else text[position : end + 3]
    if "<!--".startswith(text[position : position + 4]) and len(text) - position < 4:
        return None  # perhaps a comment's start
    if text[position] == "<":
        end = text.find(">", position)
        return None if end < 0 else text[position : end + 1]
    match = _ENTITY_START.match(text, position)
    assert match is not None  # the pattern matches "&" at least
    if match.end() == len(text):
        return None
    if text[match.end()] != ";":
        raise SsmlError(
            f"{match.group()[:20]!r} is not an entity (a '&' in text is written &amp;)", offset
        )
    return text[position : match.end() + 1]


def _joined(items: list[SsmlItem]) -> list[SsmlItem]:
    joined: list[SsmlItem] = []
    for item in items:
        last = joined[-1] if joined else None
        if isinstance(item, Text) and isinstance(last, Text):
            joined[-1] = Text(last.text + item.text, last.start)
        else:
            joined.append(item)
    return joined


def _attributes(raw: str, offset: int) -> dict[str, str]:
    attributes: dict[str, str] = {}
    position = 0
    while position < len(raw.rstrip()):
        match = _ATTRIBUTE.match(raw, position)
        if match is None:
            raise SsmlError(f"malformed attributes {raw.strip()[:40]!r}", offset)
        name = match.group(1)
        if name in attributes:
            raise SsmlError(f"attribute {name!r} given twice", offset)
        value = match.group(2) if match.group(2) is not None else match.group(3)
        attributes[name] = _entities(value, offset)
        position = match.end()
    return attributes


def _entities(text: str, offset: int) -> str:
    return re.sub(r"&[^;&\s]*;", lambda m: _entity(m.group(), offset), text)


def _entity(entity: str, offset: int) -> str:
    name = entity[1:-1]
    if name in _ENTITIES:
        return _ENTITIES[name]
    try:
        if name.startswith("#x") or name.startswith("#X"):
            return chr(int(name[2:], 16))
        if name.startswith("#"):
            return chr(int(name[1:], 10))
    except (ValueError, OverflowError):
        pass
    raise SsmlError(f"unknown entity {entity[:40]!r} (a '&' in text is written &amp;)", offset)


def _check_held(element: _Element) -> None:
    attributes = element.attributes
    if element.name == "sub" and not attributes.get("alias", "").strip():
        raise SsmlError("<sub> needs an alias", element.offset)
    if element.name == "phoneme":
        if not attributes.get("ph", "").strip():
            raise SsmlError("<phoneme> needs ph", element.offset)
        alphabet = attributes.get("alphabet", "ipa")
        if alphabet not in _ALPHABETS:
            raise SsmlError(
                f"phoneme alphabet {alphabet!r}: one of {_shown(_ALPHABETS)}", element.offset
            )
    if element.name == "say-as":
        kind = attributes.get("interpret-as")
        if kind not in SAY_AS:
            raise SsmlError(
                f"say-as interpret-as {kind!r}: one of {_shown(SAY_AS)}", element.offset
            )


def _say(element: _Element, written: str) -> Say:
    attributes = element.attributes
    if element.name == "sub":
        return Say(written, element.start, alias=attributes["alias"].strip())
    if element.name == "phoneme":
        return Say(
            written,
            element.start,
            phonemes=attributes["ph"].strip(),
            alphabet=attributes.get("alphabet", "ipa"),
        )
    if element.name == "spell":
        return Say(written, element.start, interpret_as="characters")
    return Say(
        written,
        element.start,
        interpret_as=attributes["interpret-as"],
        format=attributes.get("format"),
    )


def _factor(element: _Element, name: str, named: dict[str, float]) -> float:
    """A prosody attribute as a factor: a named value, a percentage ("80%"), a change of one
    ("+10%": of 100%), or for the volume decibels."""
    value = element.attributes.get(name)
    if value is None:
        return 1.0
    if value in named:
        return named[value]
    percent = _PERCENT.match(value)
    if percent is not None:
        number = float(percent.group(2))
        if percent.group(1):  # "+10%": relative to the current value
            number = 100.0 + (number if percent.group(1) == "+" else -number)
        factor = number / 100.0
    elif name == "volume" and (decibels := _DECIBELS.match(value)) is not None:
        factor = 10.0 ** (float(decibels.group(1)) / 20.0)
    else:
        raise SsmlError(
            f"prosody {name} {value!r}: a percentage or one of {_shown(named)}", element.offset
        )
    low, high = (0.25, 4.0) if name == "rate" else (0.0, 4.0)
    if not low <= factor <= high:
        raise SsmlError(f"prosody {name} {value!r}: between {low:g}x and {high:g}x", element.offset)
    return factor


def _shown(names: Iterable[str]) -> str:
    return ", ".join(sorted(names))
