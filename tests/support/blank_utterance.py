"""A prepared segment with no words, for tests that drive the scheduling policy by hand."""

from __future__ import annotations

import numpy as np

from voxflow.engines.base import Utterance

RATE = 22050  # the bundled voice's
SPF = 256  # samples a frame


def blank_utterance(frames: int) -> Utterance:
    """``frames`` frames of silence with no words (rendered from its first frame)."""
    return Utterance(
        text="x",
        voice="joe",
        sample_rate=RATE,
        samples_per_frame=SPF,
        latents=np.zeros((1, frames), dtype=np.float32),
        phonemes=(),
        phoneme_frames=np.zeros(0, dtype=np.int64),
        words=(),
        onset_frames=3,
    )
