"""Streaming TextBuffer: turns incrementally fed text into speakable segments.

Text arrives in arbitrary pieces (LLM tokens, keystrokes, whole paragraphs). The buffer finds
boundaries with ``voxflow.text.segment`` and emits a segment once the chunking rules say where
it ends *and* no further text could change that decision.

Invariants:

* Chunking independence: for any text and any way of cutting it into pieces, calling
  ``feed(piece)`` for each piece and then ``flush()`` yields exactly the same segments (text,
  start, end, boundary, index, turn_first) as ``feed(whole)`` followed by ``flush()``. Decisions
  only read boundaries that are already final (see ``BoundaryScanner.settled``) and a cut
  forced by ``max_chars`` is only taken once every boundary up to ``max_chars`` is known.
* Offsets: ``start``/``end`` index the concatenation of all text ever fed to the buffer, and
  ``segment.text == stream[start:end]`` with no surrounding whitespace. Segments are strictly
  ordered and only whitespace lies between them, so no text is lost or duplicated.
* ``end - start <= max_chars`` for every segment; whitespace never forms a segment.
* ``feed`` costs time proportional to the new text (plus bounded lookbehind), not to the
  amount buffered.

Chunking rules, for segment ``i`` of a turn starting at its first non-space character ``s``:

* ``minimum = schedule[min(i, len(schedule) - 1)]`` (ElevenLabs ``chunk_length_schedule``
  semantics); characters from ``s`` for every strategy except ``word``, where it counts words.
* The segment ends at the first boundary at or past the minimum whose kind is acceptable:
  ``sentence`` accepts SENTENCE; ``adaptive`` accepts CLAUSE for the first segment of a turn and
  SENTENCE afterwards; ``fixed`` and ``word`` accept any boundary.
* If no acceptable boundary lies within ``max_chars``, the cut goes to the strongest (then
  latest) boundary within ``[minimum, max_chars]``; failing that the latest boundary within
  ``max_chars``; failing that a hard cut at exactly ``max_chars`` (``SegmentEnd.CUT``).
* Default schedules: sentence ``(1,)``; adaptive ``(20, 60)`` (a quick first segment, then whole
  sentences of at least 60 characters, so short sentences are merged; entries are capped at
  ``max_chars``); fixed ``(fixed_chars,)``; word ``(words_per_chunk,)`` words. An explicit
  schedule replaces the minimums only.
* ``auto_mode`` ignores strategy and schedule: every confirmed SENTENCE boundary ends a segment.
* ``flush`` emits everything buffered as one ``FLUSH`` segment and starts a new turn: the
  segment index returns to 0. It never needs to split: ``feed`` already cut anything that
  exceeded ``max_chars``, since such a cut is certain once ``max_chars`` is exceeded.
"""

import bisect
import enum
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from voxflow.text.segment import Boundary, BoundaryKind, BoundaryScanner

__all__ = [
    "MIN_MAX_CHARS",
    "ChunkingConfig",
    "Segment",
    "SegmentEnd",
    "Strategy",
    "TextBuffer",
]

MIN_MAX_CHARS = 20
"""Smallest accepted ``ChunkingConfig.max_chars``."""


class Strategy(enum.StrEnum):
    """Which boundaries may end a segment; see the module docstring."""

    SENTENCE = "sentence"
    ADAPTIVE = "adaptive"
    FIXED = "fixed"
    WORD = "word"


class SegmentEnd(enum.IntEnum):
    """What ended a segment. Values match ``BoundaryKind`` for the three boundary kinds."""

    CUT = 0  # hard cut inside a word longer than max_chars
    WORD = 1
    CLAUSE = 2
    SENTENCE = 3
    FLUSH = 4  # flush() or an idle flush ended the turn


@dataclass(frozen=True)
class ChunkingConfig:
    """How a ``TextBuffer`` cuts text. Validated on construction (``ValueError``).

    ``chunk_length_schedule`` entries must be positive integers no larger than ``max_chars``
    (a larger minimum could never be met before the hard cap); a list is stored as a tuple.
    ``fixed_chars`` and ``words_per_chunk`` must be positive, and no larger than ``max_chars``
    when they are the schedule in force; ``max_chars >= MIN_MAX_CHARS``; ``idle_flush_s`` is
    None or a finite number of seconds greater than zero.
    """

    strategy: Strategy = Strategy.ADAPTIVE
    chunk_length_schedule: tuple[int, ...] | None = None
    auto_mode: bool = False
    max_chars: int = 250
    fixed_chars: int = 60
    words_per_chunk: int = 6
    idle_flush_s: float | None = None

    def __post_init__(self) -> None:
        try:
            strategy = Strategy(self.strategy)
        except ValueError:
            choices = ", ".join(s.value for s in Strategy)
            raise ValueError(f"strategy must be one of {choices}, got {self.strategy!r}") from None
        object.__setattr__(self, "strategy", strategy)
        if not isinstance(self.auto_mode, bool):
            raise ValueError(f"auto_mode must be a bool, got {self.auto_mode!r}")
        _check_int("max_chars", self.max_chars, MIN_MAX_CHARS, None)
        # fixed_chars and words_per_chunk only need to fit under max_chars when they are in use.
        fixed_in_use = self.strategy is Strategy.FIXED and self.chunk_length_schedule is None
        words_in_use = self.strategy is Strategy.WORD and self.chunk_length_schedule is None
        _check_int("fixed_chars", self.fixed_chars, 1, self.max_chars if fixed_in_use else None)
        _check_int(
            "words_per_chunk", self.words_per_chunk, 1, self.max_chars if words_in_use else None
        )
        if self.chunk_length_schedule is not None:
            object.__setattr__(
                self, "chunk_length_schedule", _check_schedule(self.chunk_length_schedule, self)
            )
        idle = self.idle_flush_s
        if idle is not None and (
            isinstance(idle, bool)
            or not isinstance(idle, int | float)
            or not math.isfinite(idle)
            or idle <= 0
        ):
            raise ValueError(f"idle_flush_s must be None or a finite number > 0, got {idle!r}")

    @property
    def effective_schedule(self) -> tuple[int, ...]:
        """The minimums in force: the explicit schedule or the strategy's default."""
        if self.chunk_length_schedule is not None:
            return self.chunk_length_schedule
        match self.strategy:
            case Strategy.SENTENCE:
                return (1,)
            case Strategy.ADAPTIVE:
                return (min(20, self.max_chars), min(60, self.max_chars))
            case Strategy.FIXED:
                return (self.fixed_chars,)
            case Strategy.WORD:
                return (self.words_per_chunk,)


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and max_chars ({high})"
        raise ValueError(f"{name} must be {bound}, got {value}")


def _check_schedule(schedule: object, config: ChunkingConfig) -> tuple[int, ...]:
    if not isinstance(schedule, Sequence) or isinstance(schedule, str) or not schedule:
        raise ValueError(f"chunk_length_schedule must be a non-empty tuple, got {schedule!r}")
    for position, entry in enumerate(schedule):
        _check_int(f"chunk_length_schedule[{position}]", entry, 1, config.max_chars)
    return tuple(schedule)


@dataclass(frozen=True)
class Segment:
    """A piece of text ready to be spoken. ``text == stream[start:end]``, already stripped."""

    text: str
    start: int
    end: int
    boundary: SegmentEnd
    index: int  # position within the current turn, from 0
    turn_first: bool  # index == 0


class TextBuffer:
    """Accumulates fed text and releases segments according to a ``ChunkingConfig``."""

    def __init__(self, config: ChunkingConfig) -> None:
        self._config = config
        self._schedule = config.effective_schedule
        self._counts_words = config.strategy is Strategy.WORD and not config.auto_mode
        self._scanner = BoundaryScanner()
        # Confirmed boundaries after the last cut, in order.
        self._pending: list[Boundary] = []
        self._cut = 0  # everything before this stream offset has been emitted or skipped
        self._index = 0  # index of the next segment in the turn
        self._content: int | None = None  # first non-space offset at or after the cut
        self._no_content_before = 0  # only whitespace lies in [cut, this)
        self._last_feed: float | None = None
        # Search state for the segment under construction; kept across feeds so that each
        # boundary is examined once.
        self._examined = 0
        self._best: Boundary | None = None
        self._latest: Boundary | None = None

    @property
    def config(self) -> ChunkingConfig:
        return self._config

    @property
    def buffered(self) -> str:
        """Text fed but not yet emitted (including whitespace after the last segment)."""
        return self._scanner.text(self._cut, self._scanner.end)

    def feed(self, text: str, now: float | None = None) -> list[Segment]:
        """Add ``text`` and return the segments that became ready, in order.

        ``now`` (seconds, same clock as ``poll``) defaults to ``time.monotonic()``.
        """
        if not text:
            return []
        self._last_feed = time.monotonic() if now is None else now
        confirmed = self._scanner.feed(text)
        self._pending.extend(b for b in confirmed if b.pos > self._cut)
        out: list[Segment] = []
        while (segment := self._next_segment()) is not None:
            out.append(segment)
        return out

    def flush(self) -> list[Segment]:
        """Emit everything buffered as one ``FLUSH`` segment and start a new turn.

        A cut forced by ``max_chars`` is taken by ``feed`` as soon as it is certain, which is
        whenever the buffered content exceeds ``max_chars``; so the remainder always fits.
        """
        out: list[Segment] = []
        start = self._locate_content()
        if start is not None:
            out.append(self._emit(start, self._scanner.settled, SegmentEnd.FLUSH))
        self._cut = self._scanner.end
        self._pending.clear()
        self._start_segment()
        self._scanner.release(self._cut)
        self._index = 0
        return out

    def poll(self, now: float) -> list[Segment]:
        """Flush if the idle deadline has passed; otherwise return nothing."""
        deadline = self.idle_deadline()
        if deadline is not None and now >= deadline:
            return self.flush()
        return []

    def idle_deadline(self) -> float | None:
        """When ``poll`` would flush buffered text, or None if it never would."""
        idle = self._config.idle_flush_s
        if idle is None or self._last_feed is None or self._locate_content() is None:
            return None
        return self._last_feed + idle

    def _rule(self) -> tuple[int, BoundaryKind]:
        """Minimum length and weakest acceptable boundary for the next segment."""
        if self._config.auto_mode:
            return 1, BoundaryKind.SENTENCE
        minimum = self._schedule[min(self._index, len(self._schedule) - 1)]
        match self._config.strategy:
            case Strategy.SENTENCE:
                accept = BoundaryKind.SENTENCE
            case Strategy.ADAPTIVE:
                accept = BoundaryKind.CLAUSE if self._index == 0 else BoundaryKind.SENTENCE
            case Strategy.FIXED | Strategy.WORD:
                accept = BoundaryKind.WORD
        return minimum, accept

    def _next_segment(self) -> Segment | None:
        """The next segment if its end is already certain, else None."""
        start = self._locate_content()
        if start is None:
            return None
        minimum, accept = self._rule()
        limit = start + self._config.max_chars
        while self._examined < len(self._pending):
            boundary = self._pending[self._examined]
            if boundary.pos > limit:
                return self._fallback(start)
            self._examined += 1
            measure = self._examined if self._counts_words else boundary.pos - start
            if measure >= minimum:
                if boundary.kind >= accept:
                    return self._emit(start, boundary.pos, SegmentEnd(boundary.kind))
                # Positions only grow, so >= keeps the latest of the strongest.
                if self._best is None or boundary.kind >= self._best.kind:
                    self._best = boundary
            self._latest = boundary
        if self._scanner.settled > limit:
            return self._fallback(start)
        return None

    def _fallback(self, start: int) -> Segment:
        """Cut a segment that found no acceptable boundary within max_chars."""
        choice = self._best if self._best is not None else self._latest
        if choice is None:
            return self._emit(start, start + self._config.max_chars, SegmentEnd.CUT)
        return self._emit(start, choice.pos, SegmentEnd(choice.kind))

    def _emit(self, start: int, end: int, kind: SegmentEnd) -> Segment:
        segment = Segment(
            text=self._scanner.text(start, end),
            start=start,
            end=end,
            boundary=kind,
            index=self._index,
            turn_first=self._index == 0,
        )
        self._index += 1
        self._cut = end
        del self._pending[: bisect.bisect_right(self._pending, end, key=_position)]
        self._start_segment()
        self._scanner.release(end)
        return segment

    def _start_segment(self) -> None:
        self._content = None
        self._no_content_before = self._cut
        self._examined = 0
        self._best = None
        self._latest = None

    def _locate_content(self) -> int | None:
        if self._content is None:
            # Remember how far only whitespace was seen, so repeated polls stay cheap.
            self._content = self._scanner.find_content(self._no_content_before)
            if self._content is None:
                self._no_content_before = self._scanner.end
        return self._content


def _position(boundary: Boundary) -> int:
    return boundary.pos
