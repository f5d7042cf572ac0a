"""Streaming rational resampler (windowed-sinc, polyphase).

The model speaks at one rate (22050 Hz for our voices) and clients ask for another. Audio
arrives in chunks of arbitrary size, so the resampler keeps the input history it still needs
between calls: chunked output is the same as resampling the whole signal at once (no clicks at
chunk joins), and the only cost is a small fixed look-ahead of ``latency_samples`` input samples.

Output sample ``n`` sits at input time ``t = n * M / L`` (``L/M`` = target/source in lowest
terms) and is ``sum_k x[k] * h(t - k)`` with ``h`` a Kaiser-windowed sinc. ``t - k`` only takes
``L`` distinct fractional parts, so ``h`` is tabulated once per stream as an ``L x taps`` bank.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class ResampleQuality:
    """Filter design knobs.

    ``half_length`` counts filter taps on each side in samples of the *lower* of the two rates,
    which keeps the transition band the same width relative to the output band whichever way
    we convert; held-back latency is ``half_length`` samples at that lower rate.
    ``cutoff`` is the -6 dB point as a fraction of the lower Nyquist frequency; it sits below 1
    so that the transition band ends close to Nyquist and little aliases back into the band.
    """

    half_length: int = 16
    cutoff: float = 0.9
    kaiser_beta: float = 6.5

    def __post_init__(self) -> None:
        if self.half_length < 1:
            raise ValueError(f"half_length must be >= 1, got {self.half_length}")
        if not 0.0 < self.cutoff <= 1.0:
            raise ValueError(f"cutoff must be in (0, 1], got {self.cutoff}")
        if self.kaiser_beta < 0.0:
            raise ValueError(f"kaiser_beta must be >= 0, got {self.kaiser_beta}")


def resampled_length(num_input: int, source_rate: int, target_rate: int) -> int:
    """Samples a whole stream of ``num_input`` samples yields: every output instant that falls
    inside the input span, i.e. ``ceil(num_input * target / source)``."""
    return -(-num_input * target_rate // source_rate)


# Every stream of a rate pair shares its bank: designing one takes milliseconds (a Bessel
# function over every tap), and a stream is opened on the event loop, a thousand a minute when
# clients connect in bursts. Read-only, so that no stream can change another's.
@functools.lru_cache(maxsize=32)
def _design_bank(
    up: int, down: int, quality: ResampleQuality
) -> tuple[npt.NDArray[np.float32], int]:
    """Polyphase bank of shape ``(up, 2 * taps)`` and ``taps`` (input samples per side)."""
    # Everything below is in units of input samples. When downsampling, the filter must be
    # stretched by down/up so that it cuts at the *output* Nyquist.
    ratio = min(1.0, up / down)
    cutoff = 0.5 * quality.cutoff * ratio  # cycles per input sample
    half_width = quality.half_length / ratio
    taps = math.ceil(half_width)
    phases = np.arange(up, dtype=np.float64)[:, None] / up
    offsets = np.arange(2 * taps, dtype=np.float64)[None, :]
    # Output at input time base + p/up uses inputs base - taps + 1 + j, j = 0 .. 2*taps-1.
    distance = phases + (taps - 1) - offsets
    window = np.i0(
        quality.kaiser_beta * np.sqrt(np.clip(1.0 - (distance / half_width) ** 2, 0.0, None))
    ) / np.i0(quality.kaiser_beta)
    window[np.abs(distance) >= half_width] = 0.0
    bank = 2.0 * cutoff * np.sinc(2.0 * cutoff * distance) * window
    # Each phase is normalised to unit DC gain; otherwise the small per-phase gain differences
    # of a short filter show up as a faint tone at the phase-cycle rate.
    bank /= bank.sum(axis=1, keepdims=True)
    shared = bank.astype(np.float32)
    shared.flags.writeable = False
    return shared, taps


class StreamResampler:
    """Resamples one mono float32 stream; create one per stream, it keeps state between calls."""

    def __init__(
        self, source_rate: int, target_rate: int, quality: ResampleQuality | None = None
    ) -> None:
        if source_rate <= 0 or target_rate <= 0:
            raise ValueError(f"sample rates must be positive, got {source_rate} -> {target_rate}")
        self.source_rate = source_rate
        self.target_rate = target_rate
        common = math.gcd(source_rate, target_rate)
        self._up = target_rate // common
        self._down = source_rate // common
        self._identity = self._up == self._down
        if self._identity:
            self._bank = np.zeros((1, 0), dtype=np.float32)
            self._taps = 0
        else:
            self._bank, self._taps = _design_bank(
                self._up, self._down, quality or ResampleQuality()
            )
        # Input samples with index < 0 are silence; the buffer starts at index _buffer_start.
        self._buffer = np.zeros(max(self._taps - 1, 0), dtype=np.float32)
        self._buffer_start = -len(self._buffer)
        self._received = 0  # input samples seen so far
        self._emitted = 0  # output samples produced so far
        self._flushed = False

    @property
    def latency_samples(self) -> int:
        """Input samples held back by ``process`` until later input (or ``flush``) arrives."""
        return self._taps

    @property
    def latency_ms(self) -> float:
        return 1000.0 * self._taps / self.source_rate

    def process(self, chunk: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Feed the next input chunk; returns every output sample that can be computed now."""
        if self._flushed:
            raise RuntimeError("process() called after flush()")
        samples = np.asarray(chunk, dtype=np.float32).reshape(-1)
        if self._identity:
            self._received += len(samples)
            return samples.copy()
        self._received += len(samples)
        self._buffer = np.concatenate((self._buffer, samples))
        # Output n needs inputs up to floor(n * down / up) + taps, which must already be here.
        ready = self._received - self._taps  # output n is ready iff floor(n*down/up) < ready
        limit = -(-ready * self._up // self._down) if ready > 0 else 0
        return self._run(limit)

    def flush(self) -> npt.NDArray[np.float32]:
        """End of stream: returns the held-back tail (input after the end is taken as silence)."""
        if self._flushed:
            return np.zeros(0, dtype=np.float32)
        self._flushed = True
        if self._identity:
            return np.zeros(0, dtype=np.float32)
        self._buffer = np.concatenate((self._buffer, np.zeros(self._taps, dtype=np.float32)))
        return self._run(resampled_length(self._received, self._down, self._up))

    def _run(self, limit: int) -> npt.NDArray[np.float32]:
        """Compute outputs ``_emitted .. limit - 1`` and drop input no longer needed."""
        if limit <= self._emitted:
            return np.zeros(0, dtype=np.float32)
        positions = np.arange(self._emitted, limit, dtype=np.int64) * self._down
        bases = positions // self._up
        phases = positions - bases * self._up
        width = 2 * self._taps
        windows = np.lib.stride_tricks.sliding_window_view(self._buffer, width)
        # Row r of `windows` starts at input index _buffer_start + r = base - taps + 1.
        rows = windows[bases - (self._buffer_start + self._taps - 1)]
        out: npt.NDArray[np.float32] = np.einsum("ij,ij->i", rows, self._bank[phases])
        self._emitted = limit
        next_first = (limit * self._down) // self._up - self._taps + 1
        drop = next_first - self._buffer_start
        if drop > 0:
            self._buffer = self._buffer[drop:].copy()
            self._buffer_start = next_first
        return out
