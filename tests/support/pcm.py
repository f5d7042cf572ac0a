"""Comparing two renderings of the same text and seed.

They are the same audio, but not always the same bytes: the scheduler sizes its render windows
by how far each stream is ahead of its listener (``voxflow.runtime.windows``), so a busy
machine cuts a text into other windows, and ONNX Runtime's float sums over a window of another
size round differently in the last bits. A sample then differs by a few steps of 32768; a
different seed, or a different word, changes the audio by thousands.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_ROUNDING_STEPS", "assert_same_pcm"]

# 16-bit steps two renderings of the same text and seed may differ by (the decoder's windowed
# output equals its whole output within 1e-4 of full scale: tests/engines/test_graph_split.py).
MAX_ROUNDING_STEPS = 8


def assert_same_pcm(first: bytes, second: bytes) -> None:
    """``first`` and ``second`` (16-bit PCM) are the same rendering, to within rounding."""
    assert len(first) == len(second), (len(first), len(second))
    a = np.frombuffer(first, dtype="<i2").astype(np.int32)
    b = np.frombuffer(second, dtype="<i2").astype(np.int32)
    worst = int(np.max(np.abs(a - b))) if len(a) else 0
    assert worst <= MAX_ROUNDING_STEPS, f"samples differ by up to {worst} steps"
