"""A context's markup: the client's chunks of SSML in, what its text buffer and pieces need out.

``Markup.feed`` reads a chunk (``voxflow.text.ssml``) and returns steps for the context, in order:

* ``Written``: written text for the context's text and its buffer. A ``Say`` (``<sub>``,
  ``<phoneme>``, ``<say-as>``) is written text too, and the buffer is fed it masked into one
  word (its letters and digits kept, every other character a letter), so no cut falls inside
  it; what it stands for is kept as an ``Override`` of its written range, which the normalizer
  applies and times as one word.
* ``Cut``: the buffer must end a segment here (before a break, a change of rate or volume, and
  at the end of a ``<s>`` or ``<p>``), so that no piece spans the change.
* ``Pause``: silence, in milliseconds, before the next piece's speech, in place of the pause
  its boundary would get.
* ``Restyle``: the rate and volume, as factors of the context's own, from here on.

Offsets are those of the written text, which the context's text is: timings index it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from voxflow.text.chunking import SegmentEnd
from voxflow.text.normalize.normalizer import Normalizer, Override
from voxflow.text.say import spoken_form
from voxflow.text.ssml import (
    Boundary,
    Break,
    Say,
    SsmlDialect,
    SsmlError,
    SsmlItem,
    SsmlReader,
    Style,
    Text,
)

__all__ = ["Cut", "Markup", "MarkupStep", "Pause", "Restyle", "Written"]

_NOT_WORD = re.compile(r"[^\w]|_")


@dataclass(frozen=True)
class Written:
    text: str  # as the client wrote it
    buffered: str  # what the text buffer is fed: as long as ``text``


@dataclass(frozen=True)
class Cut:
    boundary: SegmentEnd | None  # None: whatever the text's own end is (``TextBuffer.cut``)


@dataclass(frozen=True)
class Pause:
    ms: float


@dataclass(frozen=True)
class Restyle:
    style: Style


MarkupStep = Written | Cut | Pause | Restyle


class Markup:
    """One context's SSML reader and the overrides its ``Say`` items made."""

    def __init__(self, dialect: SsmlDialect, normalizer: Normalizer) -> None:
        self._reader = SsmlReader(dialect)
        self._normalizer = normalizer
        self._overrides: list[Override] = []  # by start, on the written text
        self._starts: list[int] = []

    def feed(self, chunk: str) -> list[MarkupStep]:
        """The steps ``chunk`` completes; ``SsmlError`` if it is bad, and then nothing of it
        is taken: the client may send it again, corrected."""
        state = self._reader.checkpoint()
        try:
            return self._steps(self._reader.feed(chunk))
        except SsmlError:
            self._reader.rollback(state)
            raise

    def end(self) -> list[MarkupStep]:
        """The end of the document (``SsmlReader.end``)."""
        return self._steps(self._reader.end())

    def overrides(self, start: int, end: int) -> tuple[Override, ...]:
        """The overrides inside the written range ``[start, end)``, relative to ``start``."""
        first = bisect.bisect_left(self._starts, start)
        found: list[Override] = []
        for override in self._overrides[first:]:
            if override.start >= end:
                break
            if override.end <= end:
                found.append(
                    Override(override.start - start, override.end - start, override.spoken)
                )
        return tuple(found)

    def _steps(self, items: list[SsmlItem]) -> list[MarkupStep]:
        says = [(item, self._spoken(item)) for item in items if isinstance(item, Say)]
        spoken = dict(says)  # every Say read before anything is kept: all or nothing
        steps: list[MarkupStep] = []
        for item in items:
            if isinstance(item, Text):
                steps.append(Written(item.text, item.text))
            elif isinstance(item, Say):
                steps.append(self._say(item, spoken[item]))
            elif isinstance(item, Break):
                steps += [Cut(None), Pause(item.ms)]
            elif isinstance(item, Style):
                steps += [Cut(None), Restyle(item)]
            elif isinstance(item, Boundary):
                steps.append(Cut(SegmentEnd.FLUSH if item.element == "p" else SegmentEnd.SENTENCE))
        return steps

    def _spoken(self, say: Say) -> str:
        try:
            return spoken_form(say, self._normalizer)
        except ValueError as error:
            raise SsmlError(str(error), say.start, written=True) from None

    def _say(self, say: Say, spoken: str) -> Written:
        start = say.start + len(say.written) - len(say.written.lstrip())
        end = say.start + len(say.written.rstrip())
        self._overrides.append(Override(start, end, spoken))
        self._starts.append(start)
        return Written(say.written, _NOT_WORD.sub("x", say.written))
