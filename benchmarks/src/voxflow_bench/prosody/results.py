"""The data of a ``voxflow bench-prosody`` run: its options, the cuts it finds and what it
measures at each, per reply and for the whole run.

``prosody`` fills these in; ``prosody_report`` aggregates and prints them. See ``prosody`` for
what each measure means.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from voxflow import VoiceSettings, WordTiming
from voxflow_bench.levels import LevelSettings
from voxflow_bench.pitch import PitchSettings

__all__ = [
    "Cut",
    "CutKind",
    "CutMeasure",
    "CutResult",
    "Mode",
    "NoiseMode",
    "ProsodyOptions",
    "ProsodyReport",
    "ReplyResult",
]


class NoiseMode(enum.StrEnum):
    """``off``: noise_scale = noise_w = 0, so renderings differ only where the text was cut;
    ``seeded``: the voice's own noise, seeded (a session gives segment ``i`` seed + i)."""

    OFF = "off"
    SEEDED = "seeded"


class CutKind(enum.StrEnum):
    SENTENCE = "sentence"  # between two sentences of the reference: not a cut inside one
    CLAUSE = "clause"  # at a clause mark inside a sentence: , ; : or a dash
    PHRASE = "phrase"  # anywhere else inside a sentence (a phrase or word boundary)


class Mode(enum.StrEnum):
    WHOLE = "whole"  # the reply sent in one text message
    TOKENS = "tokens"  # the reply sent as LLM-like pieces at ``token_rate``


@dataclass(frozen=True)
class ProsodyOptions:
    voice: str | None = None  # None: the voice the bench is run with (the default voice)
    noise: NoiseMode = NoiseMode.OFF
    seed: int = 1
    tokens: bool = False
    token_rate: float = 50.0
    points_per_word: int = 10
    floor_seed_offset: int = 1000
    pause_goal_ms: float = 40.0
    duration_goal: float = 0.05
    levels: LevelSettings = field(default_factory=LevelSettings)
    pitch: PitchSettings = field(default_factory=PitchSettings)

    def __post_init__(self) -> None:
        if not math.isfinite(self.token_rate) or self.token_rate <= 0:
            raise ValueError(f"token_rate must be > 0, got {self.token_rate}")
        if self.points_per_word < 1:
            raise ValueError(f"points_per_word must be >= 1, got {self.points_per_word}")
        if self.floor_seed_offset == 0:
            raise ValueError("floor_seed_offset must not be 0: the floor needs another seed")

    @property
    def modes(self) -> tuple[Mode, ...]:
        return (Mode.WHOLE, Mode.TOKENS) if self.tokens else (Mode.WHOLE,)

    def voice_settings(self) -> VoiceSettings:
        if self.noise is NoiseMode.OFF:
            return VoiceSettings(noise_scale=0.0, noise_w=0.0, seed=self.seed)
        return VoiceSettings(seed=self.seed)

    def floor_settings(self) -> tuple[VoiceSettings, VoiceSettings]:
        """Two seeded renderings of the reference: the voice's own noise, two seeds."""
        return VoiceSettings(seed=self.seed), VoiceSettings(seed=self.seed + self.floor_seed_offset)


@dataclass(frozen=True)
class Cut:
    """A boundary between two separately rendered pieces of the streamed reply."""

    kind: CutKind
    before: WordTiming  # the last word of the piece before (streamed timing)
    after: WordTiming  # the first word of the piece after

    @property
    def label(self) -> str:
        return f"{self.before.word} | {self.after.word}"


@dataclass(frozen=True)
class CutMeasure:
    """One rendering against another at one word boundary (times in ms, F0 in semitones)."""

    pause_ms: float  # longest silence at the boundary in the rendering under test
    reference_pause_ms: float
    f0_distance_st: float | None  # None: no contour point voiced in both
    end_f0_delta_st: float | None  # None: the word before has no point voiced in both
    energy_distance_db: float | None
    f0_points: int = 0  # contour points voiced in both and compared
    f0_octave_errors: int = 0  # points voiced in both but an octave apart: left out

    @property
    def added_pause_ms(self) -> float:
        return self.pause_ms - self.reference_pause_ms


@dataclass(frozen=True)
class CutResult:
    cut: Cut
    measure: CutMeasure | None  # None: the boundary has no counterpart in the reference
    floor: CutMeasure | None  # the reference against its re-seeded self, same boundary


@dataclass(frozen=True)
class ReplyResult:
    name: str
    category: str
    chars: int
    mode: Mode
    streamed_span_s: float
    reference_span_s: float
    floor_duration_ratio: float | None
    cuts: tuple[CutResult, ...]
    pieces: int = 0  # separately rendered pieces of the streamed reply
    events: int = 0  # timestamps events they came in

    @property
    def duration_ratio(self) -> float | None:
        if self.reference_span_s <= 0:
            return None
        return self.streamed_span_s / self.reference_span_s


@dataclass(frozen=True)
class ProsodyReport:
    options: ProsodyOptions
    voice: str
    replies: tuple[ReplyResult, ...]
    wall_s: float
