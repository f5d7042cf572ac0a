"""Float32 model output to 16-bit PCM, and WAV files."""

from __future__ import annotations

import wave
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

_INT16_MAX = 32767.0


def to_pcm16(audio: npt.NDArray[np.float32]) -> bytes:
    """Little-endian signed 16-bit samples; values outside [-1, 1] are clipped, not wrapped."""
    scaled = np.clip(audio, -1.0, 1.0) * _INT16_MAX
    samples: npt.NDArray[np.int16] = np.rint(scaled).astype("<i2")
    return samples.tobytes()


def write_wav(
    target: Path | BinaryIO, sample_rate: int, chunks: Iterable[npt.NDArray[np.float32]]
) -> int:
    """Write mono 16-bit WAV from float chunks; returns the number of samples written."""
    samples = 0
    with wave.open(str(target) if isinstance(target, Path) else target, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        for chunk in chunks:
            wav.writeframes(to_pcm16(chunk))
            samples += len(chunk)
    return samples
