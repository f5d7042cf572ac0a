"""The Engine protocol and the value objects that cross the engine border.

The scheduler drives an engine in small jobs: one ``prepare`` (phonemization + text stage) per
segment, then ``render`` calls over windows of latent frames. ``stream`` composes the two for
library users who just want audio chunks in order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


class VoiceNotFoundError(KeyError):
    """The requested voice is not in the registry."""

    def __init__(self, name: str, available: list[str]) -> None:
        super().__init__(name)
        self.name = name
        self.available = available

    def __str__(self) -> str:
        return f"unknown voice {self.name!r}; available: {', '.join(self.available) or 'none'}"


@dataclass(frozen=True)
class VoiceSettings:
    """Per-request synthesis settings. ``None`` means the voice's own default."""

    speed: float = 1.0
    noise_scale: float | None = None
    noise_w: float | None = None
    seed: int | None = None
    speaker_id: int | None = None

    def __post_init__(self) -> None:
        if not 0.25 <= self.speed <= 4.0:
            raise ValueError(f"speed must be between 0.25 and 4.0, got {self.speed}")
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


@dataclass(frozen=True)
class WindowPlan:
    """How an utterance is cut into render windows: small first for fast audio, then large.

    Each window after the first is ``growth`` times the frames already rendered (at least
    ``first_frames``, at most ``max_frames``), so its compute time stays well inside the audio
    already produced (at ~0.4 ms per 11.6 ms frame on the dev machine, growth 8 leaves a 3.6x
    margin) while the number of windows, and with it the overlap wasted at their edges, stays
    small. A tail shorter than the window before it is folded into that window.
    """

    first_frames: int = 16
    growth: float = 8.0
    max_frames: int = 1024

    def __post_init__(self) -> None:
        if self.first_frames < 1 or self.max_frames < self.first_frames or self.growth < 0:
            raise ValueError("need 1 <= first_frames <= max_frames and growth >= 0")

    def windows(self, num_frames: int, rendered_before: int = 0) -> Iterator[tuple[int, int]]:
        """Half-open frame windows covering ``[0, num_frames)`` in order.

        ``rendered_before`` counts the frames of the same stream already rendered (earlier
        segments): audio in hand lets even the first window of a later segment be large.
        """
        start = 0
        size = self._size(rendered_before)
        while start < num_frames:
            end = min(num_frames, start + size)
            if num_frames - end < min(size, self.max_frames - size):
                end = num_frames
            yield start, end
            start = end
            size = self._size(rendered_before + start)

    def _size(self, rendered: int) -> int:
        if rendered == 0:
            return self.first_frames
        return min(self.max_frames, max(self.first_frames, int(self.growth * rendered)))


def stream(
    engine: Engine,
    text: str,
    voice: str,
    settings: VoiceSettings | None = None,
    plan: WindowPlan | None = None,
) -> Iterator[FloatArray]:
    """Synthesize ``text`` and yield float32 PCM chunks as each window is rendered."""
    utterance = engine.prepare(text, voice, settings or VoiceSettings())
    for start, end in (plan or WindowPlan()).windows(utterance.num_frames):
        yield engine.render(utterance, start, end)
