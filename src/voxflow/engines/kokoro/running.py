"""What a Kokoro window needs from the whole utterance: the harmonic source's phase, and the
running estimate of the decoder's normalisation statistics (``voxflow.engines.kokoro.engine``).
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from voxflow.engines.base import FloatArray
from voxflow.engines.kokoro.voices import SAMPLE_RATE

SAMPLES_PER_FRAME = 300
Stats = list[tuple[FloatArray, FloatArray]]  # per normalisation layer: mean, mean square
Sums = list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]


class Phases:
    """The harmonic source's phase over a whole utterance, as the model computes it.

    Per frame, each harmonic ``h`` advances by ``frac(f0 * h / 24000)`` (the model takes the
    fractional part per sample, and all 300 samples of a frame share its F0); the running sum,
    times ``2 pi * 300``, is interpolated linearly to the samples (half-pixel, edges held) and
    fed to ``sin``. Computed in float64 once per utterance, so every window reads the same
    values a whole run does.
    """

    def __init__(self, f0: FloatArray) -> None:
        harmonics = np.arange(1, 10, dtype=np.float64)
        steps = f0.astype(np.float64)[:, np.newaxis] * harmonics / SAMPLE_RATE
        steps -= np.floor(steps)
        self._frame_phase = 2 * np.pi * SAMPLES_PER_FRAME * np.cumsum(steps, axis=0)

    def sines(self, lo: int, hi: int) -> FloatArray:
        """``sin`` of the phase at the samples of frames ``[lo, hi)``: ``(samples, 9)``."""
        phase = self._frame_phase
        n = np.arange(lo * SAMPLES_PER_FRAME, hi * SAMPLES_PER_FRAME, dtype=np.float64)
        position = np.clip((n + 0.5) / SAMPLES_PER_FRAME - 0.5, 0, len(phase) - 1)
        left = np.floor(position).astype(np.int64)
        right = np.minimum(left + 1, len(phase) - 1)
        weight = (position - left)[:, np.newaxis]
        at = phase[left] * (1 - weight) + phase[right] * weight
        result: FloatArray = np.sin(np.mod(at, 2 * np.pi)).astype(np.float32)
        return result


class RunningStats:
    """One utterance's running statistics and its phases.

    The estimate of each layer's statistics over the whole utterance is a weighted mean of the
    voice's prior and of the windows rendered so far (each weighted by the frames it added).
    The prior weighs ``prior_frames`` times the share of the utterance not rendered yet: it
    stands in for what is unseen, so a window that covers the whole utterance normalises by its
    own statistics alone, which is the original model's whole run.
    """

    def __init__(self, prior: Stats, prior_frames: float, f0: FloatArray) -> None:
        self.lock = threading.Lock()
        self.prior: Sums = [(m.astype(np.float64), q.astype(np.float64)) for m, q in prior]
        self.prior_frames = prior_frames
        self.total = len(f0)
        self.seen = 0  # frames rendered (each window's own, context excluded)
        self.sums: Sums = []  # frame-weighted window statistics
        self.phases = Phases(f0)

    def blend_for(self, new_frames: int, window_frames: int) -> tuple[Stats, float]:
        """The statistics to feed a window that adds ``new_frames`` frames and spans
        ``window_frames`` (context included), and the weight they get against its own."""
        with self.lock:
            unseen = max(0, self.total - self.seen - new_frames) / max(1, self.total)
            prior_weight = self.prior_frames * unseen
            weight = prior_weight + self.seen
            if weight <= 0:
                return [(np.zeros((1, 1, 1), np.float32),) * 2 for _ in self.prior], 0.0
            blended = (
                [
                    ((prior_weight * m + sm) / weight, (prior_weight * q + sq) / weight)
                    for (m, q), (sm, sq) in zip(self.prior, self.sums, strict=True)
                ]
                if self.sums
                else self.prior
            )
            stats = [(m.astype(np.float32), q.astype(np.float32)) for m, q in blended]
            return stats, weight / (weight + window_frames)

    def take_in(self, own: Stats, frames: int) -> None:
        """Fold a window's own statistics in, weighted by the frames it added."""
        with self.lock:
            added: Sums = [
                (frames * m.astype(np.float64), frames * q.astype(np.float64)) for m, q in own
            ]
            self.sums = (
                added
                if not self.sums
                else [(a + c, b + d) for (a, b), (c, d) in zip(self.sums, added, strict=True)]
            )
            self.seen += frames
