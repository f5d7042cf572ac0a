"""``pcm_f32le`` from voxflow's 16-bit PCM (no I/O).

Cartesia's SDK asks for 32-bit float samples by default (``pcm_f32le`` at 44.1 kHz), which no
voxflow encoder writes. Converting 16-bit samples to floats is exact and costs microseconds per
chunk, so it happens as each chunk goes out rather than in a new encoder: the session renders
``pcm_<rate>`` and the Cartesia transports convert it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Float32Samples"]

_SCALE = np.float32(1.0 / 32768.0)  # int16's full scale maps onto [-1, 1)


class Float32Samples:
    """Converts one stream's s16le chunks to f32le. A chunk is cut on whole samples; should one
    ever end inside a sample, its odd byte waits for the next chunk."""

    def __init__(self) -> None:
        self._carry = b""

    def convert(self, data: bytes) -> bytes:
        data = self._carry + data
        whole = len(data) - len(data) % 2
        self._carry = data[whole:]
        samples = np.frombuffer(data[:whole], dtype="<i2").astype(np.float32) * _SCALE
        return samples.astype("<f4").tobytes()
