"""The value types of text chunking: how a ``TextBuffer`` cuts (``ChunkingConfig``) and what it
emits (``Segment``). The rules themselves are documented in ``voxflow.text.buffer``."""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

__all__ = [
    "AUTO_MODE_LOOKAHEAD_S",
    "DEFAULT_LEAD_COST",
    "DEFAULT_LOOKAHEAD_S",
    "MIN_MAX_CHARS",
    "ChunkingConfig",
    "Segment",
    "SegmentEnd",
    "Strategy",
    "every_sentence",
]

MIN_MAX_CHARS = 20
"""Smallest accepted ``ChunkingConfig.max_chars``."""

DEFAULT_LEAD_COST = (18, 32)
"""Spoken-cost window of a first segment cut at a phrase boundary. The text stage costs a fixed
~8 ms plus ~0.6 ms per spoken character, so 32 keeps it near 25 ms. The low end is what the
lead's audio must cover: the whole sentence rendered beside it (see ``voxflow.text.buffer``)
starts its own text stage only once its text has arrived, and 18 characters (about a second and
a half of speech) cover a first sentence of ~250 characters streamed at 50 LLM tokens a second;
on the bench corpus a low end of 12 left 5 of 92 replies with an underrun in token mode, 18 none.
Streamed at 50 tokens a second, 32 characters arrive in ~160 ms."""

DEFAULT_LOOKAHEAD_S = 0.15
"""How long a sentence end at the end of the buffered text waits for text that could refute it
("Dr." + " Smith", "3." + "50") before it counts as confirmed. An LLM streams a token every 10 to
50 ms, so 150 ms of silence means the reply has paused or ended."""

AUTO_MODE_LOOKAHEAD_S = 0.02
"""The look-ahead in auto mode. A client that asks for auto mode promises whole sentences or
phrases per message (ElevenLabs' definition; Pipecat sends one aggregated sentence per message),
so a sentence end at the end of a message is taken once the message's burst is over rather
than after an LLM's token gap: a short first sentence ("Hi!") is not held back 150 ms."""


class Strategy(enum.StrEnum):
    """Which boundaries may end a segment; see ``voxflow.text.buffer``."""

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
    when they are the schedule in force; ``max_chars >= MIN_MAX_CHARS``; ``idle_flush_s`` and
    ``lookahead_s`` are None or a finite number of seconds greater than zero. ``lead_cost`` is
    None (no early cut of the first segment) or ``(low, high)`` spoken-cost units with
    ``1 <= low <= high``.
    """

    strategy: Strategy = Strategy.ADAPTIVE
    chunk_length_schedule: tuple[int, ...] | None = None
    auto_mode: bool = False
    max_chars: int = 250
    fixed_chars: int = 60
    words_per_chunk: int = 6
    idle_flush_s: float | None = None
    lead_cost: tuple[int, int] | None = DEFAULT_LEAD_COST
    lookahead_s: float | None = DEFAULT_LOOKAHEAD_S

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
        _check_seconds("idle_flush_s", self.idle_flush_s)
        _check_seconds("lookahead_s", self.lookahead_s)
        if self.lead_cost is not None:
            lead = self.lead_cost
            if (
                not isinstance(lead, Sequence)
                or len(lead) != 2
                or any(isinstance(v, bool) or not isinstance(v, int) for v in lead)
                or not 1 <= lead[0] <= lead[1]
            ):
                raise ValueError(f"lead_cost must be None or (low, high), 1 <= low <= high: {lead}")
            object.__setattr__(self, "lead_cost", (lead[0], lead[1]))

    @property
    def effective_lookahead_s(self) -> float | None:
        """The look-ahead in force: shorter in auto mode (``AUTO_MODE_LOOKAHEAD_S``)."""
        if self.auto_mode and self.lookahead_s is not None:
            return min(self.lookahead_s, AUTO_MODE_LOOKAHEAD_S)
        return self.lookahead_s

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

    @property
    def leads(self) -> tuple[int, int] | None:
        """The lead window in force: only the adaptive strategy and auto mode cut early (the
        other strategies are explicit choices of where to cut)."""
        if self.auto_mode or self.strategy is Strategy.ADAPTIVE:
            return self.lead_cost
        return None


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and max_chars ({high})"
        raise ValueError(f"{name} must be {bound}, got {value}")


def _check_seconds(name: str, value: object) -> None:
    if value is not None and (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be None or a finite number > 0, got {value!r}")


def _check_schedule(schedule: object, config: ChunkingConfig) -> tuple[int, ...]:
    if not isinstance(schedule, Sequence) or isinstance(schedule, str) or not schedule:
        raise ValueError(f"chunk_length_schedule must be a non-empty tuple, got {schedule!r}")
    for position, entry in enumerate(schedule):
        _check_int(f"chunk_length_schedule[{position}]", entry, 1, config.max_chars)
    return tuple(schedule)


@dataclass(frozen=True)
class Segment:
    """A piece of text ready to be spoken. ``text == stream[start:end]``, already stripped.

    ``lead`` marks the first segment of a turn when it ends inside a sentence (at a clause mark
    or an early phrase cut): the segment after it finishes that sentence, and a renderer may
    speak the two as one utterance, starting with this one's audio (see ``voxflow.text.buffer``).
    """

    text: str
    start: int
    end: int
    boundary: SegmentEnd
    index: int  # position within the current turn, from 0
    turn_first: bool  # index == 0
    lead: bool = False


def every_sentence(config: ChunkingConfig) -> ChunkingConfig:
    """``config`` with every sentence a segment of its own, so that the pause after each one is
    a join the seam joiner sets (a context's own pause after a sentence). Only the adaptive
    strategy merges short sentences: its later minimums become 1; the first segment's, and
    every other strategy, stay as they are."""
    if config.auto_mode or config.strategy is not Strategy.ADAPTIVE:
        return config
    return replace(config, chunk_length_schedule=(config.effective_schedule[0], 1))
