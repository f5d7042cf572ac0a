"""The Engine protocol and the value objects that cross the engine border.

The scheduler drives an engine in small jobs: one ``prepare`` (phonemization + text stage) per
segment, then ``render`` calls over windows of latent frames (``voxflow.runtime.windows`` sizes
them). Library users who want audio chunks in order use ``voxflow.connection.speaker.LocalSpeaker``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


class VoiceNotFoundError(KeyError):
    """The requested voice is not in the registry."""

    def __init__(self, name: str, available: list[str], why: str = "") -> None:
        super().__init__(name)
        self.name = name
        self.available = available
        self.why = why  # what would make the name a voice, when the registry can tell

    def __str__(self) -> str:
        why = f" ({self.why})" if self.why else ""
        return f"unknown voice {self.name!r}{why}; available: {', '.join(self.available) or 'none'}"


MIN_SPEED = 0.25
MAX_SPEED = 4.0


@dataclass(frozen=True)
class VoiceSettings:
    """Per-request synthesis settings. ``None`` means the voice's own default."""

    speed: float = 1.0
    noise_scale: float | None = None
    noise_w: float | None = None
    seed: int | None = None
    speaker_id: int | None = None

    def __post_init__(self) -> None:
        if not MIN_SPEED <= self.speed <= MAX_SPEED:
            raise ValueError(f"speed must be between {MIN_SPEED} and {MAX_SPEED}, got {self.speed}")
        for name in ("noise_scale", "noise_w"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 2.0:
                raise ValueError(f"{name} must be between 0 and 2, got {value}")
        if self.speaker_id is not None and self.speaker_id < 0:
            raise ValueError(f"speaker_id must be >= 0, got {self.speaker_id}")


@dataclass(frozen=True)
class VoiceInfo:
    """A voice the registry knows about (not necessarily loaded)."""

    name: str
    language: str
    sample_rate: int
    source: str  # "bundled" or the directory it was found in
    model_path: Path
    config_path: Path
    num_speakers: int = 1
    speakers: tuple[str, ...] = ()
    # Which engine renders it: "piper" (a Piper ONNX voice) or "kokoro" (``model_path`` is the
    # model's first part, ``config_path`` the style pack).
    engine: str = "piper"


@dataclass(frozen=True)
class WordSpan:
    """A word of the input text and the latent frames it is spoken in.

    ``char_start``/``char_end`` index the text given to ``prepare``; frames are half-open.
    """

    word: str
    char_start: int
    char_end: int
    start_frame: int
    end_frame: int


@dataclass(frozen=True, eq=False)
class Utterance:
    """The output of the text stage for one segment: everything ``render`` needs."""

    text: str
    voice: str
    sample_rate: int
    samples_per_frame: int
    latents: FloatArray = field(repr=False)  # (channels, frames): z_p, noise already applied
    phonemes: tuple[str, ...]
    phoneme_frames: IntArray = field(repr=False)  # frames per phoneme, aligned with ``phonemes``
    words: tuple[WordSpan, ...]
    speaker_id: int | None = None
    # A per-utterance input of the engine's acoustic stage besides the frames (Kokoro's style
    # vector); None for Piper.
    conditioning: FloatArray | None = field(default=None, repr=False)
    # Frames before its first word's first frame at which its speech may already begin: the
    # engine's decoder spreads a phoneme's onset (a stop's voicing, a breath) back over its
    # neighbours. A rendering that starts later than that cuts the first sound and fades in
    # on it (``voxflow.runtime.handover.lead_in``).
    onset_frames: int = field(kw_only=True)

    @property
    def num_frames(self) -> int:
        return int(self.latents.shape[1])

    @property
    def num_samples(self) -> int:
        return self.num_frames * self.samples_per_frame

    @property
    def duration_s(self) -> float:
        return self.num_samples / self.sample_rate


class Engine(Protocol):
    """What the scheduler needs from a synthesis engine. Both calls are thread-safe and blocking.

    ``threads`` asks for a job to use that many CPU threads (the scheduler does, when nothing
    else runs); an engine may ignore it, and results must not depend on it.
    """

    def voices(self) -> list[VoiceInfo]: ...

    def voice_info(self, voice: str) -> VoiceInfo: ...

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance: ...

    def render(
        self, utterance: Utterance, start_frame: int, end_frame: int, threads: int | None = None
    ) -> FloatArray: ...
