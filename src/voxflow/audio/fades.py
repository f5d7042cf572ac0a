"""Raised-cosine gains: the fades at the kept edges of a segment, and the crossfade that hands a
lead's audio over to its takeover.

A raised cosine has no corner where it starts or ends, so a fade over a few milliseconds removes
the click of a waveform cut at a non-silent sample without being heard as a fade.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["crossfade", "rising"]

FloatArray = npt.NDArray[np.float32]


def crossfade(tail: FloatArray, head: FloatArray) -> FloatArray:
    """``tail`` fading out while ``head`` fades in over their common length (raised cosine, the
    two gains summing to one): where a takeover's audio replaces its lead's, the last samples of
    the lead and the same stretch of the takeover are two renderings of the same sound."""
    size = min(len(tail), len(head))
    if size == 0:
        return np.array(head, dtype=np.float32)
    gain = rising(np.arange(size, dtype=np.int64), size)
    mixed = tail[-size:] * (1.0 - gain) + head[:size] * gain
    return np.concatenate([mixed.astype(np.float32), head[size:]]).astype(np.float32, copy=False)


def rising(position: npt.NDArray[np.int64], length: int) -> npt.NDArray[np.float64]:
    """Raised-cosine gain at ``position`` samples into a fade of ``length`` (0 < gain < 1).

    Sampled at half-sample offsets so the fade is symmetric and never exactly 0 or 1 inside it.
    """
    phase = (position.astype(np.float64) + 0.5) / length
    gain: npt.NDArray[np.float64] = 0.5 - 0.5 * np.cos(np.pi * phase)
    return gain
