"""Short-frame levels of audio: silent runs, the extent of speech, for the prosody bench.

Everything works on a grid of ``frame_ms`` frames that starts at the first sample of the span
asked about, and a frame is silent when its mean square is below ``silence_db`` dBFS. A partial
frame at the end of a span is left out: it would be judged on fewer samples than the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LevelSettings:
    """``silence_db`` -50: the voice's silence sits near -90 dBFS and its vowels near -25, while
    the weakest speech sounds (a final "t" release, an "h") fall to -50/-60 over 5 ms; -50 keeps
    those quiet sounds from bridging a real pause, and a 5 ms frame resolves the 40 ms goal."""

    silence_db: float = -50.0
    frame_ms: float = 5.0

    def __post_init__(self) -> None:
        if not math.isfinite(self.silence_db):
            raise ValueError(f"silence_db must be finite, got {self.silence_db!r}")
        if not math.isfinite(self.frame_ms) or self.frame_ms <= 0:
            raise ValueError(f"frame_ms must be a finite number > 0, got {self.frame_ms!r}")

    def frame_samples(self, sample_rate: int) -> int:
        return max(1, round(self.frame_ms * sample_rate / 1000.0))


def frame_levels_db(
    audio: npt.NDArray[np.floating], sample_rate: int, start: int, end: int, frame: int
) -> FloatArray:
    """Level in dBFS (mean square) of each complete ``frame``-sample frame of ``[start, end)``."""
    start = max(0, start)
    end = min(len(audio), end)
    count = (end - start) // frame if end > start else 0
    if count == 0:
        return np.zeros(0, dtype=np.float64)
    block = np.asarray(audio[start : start + count * frame], dtype=np.float64).reshape(count, frame)
    levels: FloatArray = 10.0 * np.log10(np.mean(block * block, axis=1) + 1e-12)
    return levels


def longest_silence_s(
    audio: npt.NDArray[np.floating],
    sample_rate: int,
    start: int,
    end: int,
    settings: LevelSettings | None = None,
) -> float:
    """Seconds of the longest run of silent frames in ``[start, end)`` (0.0 when none)."""
    s = settings or LevelSettings()
    frame = s.frame_samples(sample_rate)
    silent = frame_levels_db(audio, sample_rate, start, end, frame) < s.silence_db
    longest = run = 0
    for quiet in silent.tolist():
        run = run + 1 if quiet else 0
        longest = max(longest, run)
    return longest * frame / sample_rate


def speech_extent(
    audio: npt.NDArray[np.floating],
    sample_rate: int,
    start: int,
    end: int,
    settings: LevelSettings | None = None,
) -> tuple[int, int] | None:
    """First and one-past-last sample of the non-silent frames of ``[start, end)``; None when
    the span is all silence (or shorter than a frame)."""
    s = settings or LevelSettings()
    frame = s.frame_samples(sample_rate)
    loud = np.flatnonzero(frame_levels_db(audio, sample_rate, start, end, frame) >= s.silence_db)
    if len(loud) == 0:
        return None
    first = max(0, start)
    return first + int(loud[0]) * frame, first + (int(loud[-1]) + 1) * frame


def speech_span_s(
    audio: npt.NDArray[np.floating], sample_rate: int, settings: LevelSettings | None = None
) -> float:
    """Seconds from the first to the last non-silent frame of the whole of ``audio``."""
    extent = speech_extent(audio, sample_rate, 0, len(audio), settings)
    return 0.0 if extent is None else (extent[1] - extent[0]) / sample_rate
