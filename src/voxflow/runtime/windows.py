"""How large the scheduler's next render window is.

A stream's first window is small (``first_frames``): it is what the listener waits for. After
that, a window is as large as its render time allows: the largest of ``later_frames``,
``2 * later_frames``, ... ``max_frames`` whose estimated render time is at most ``render_share``
of the audio the stream has in hand, and never less than ``later_frames``. A stream that is
comfortably ahead thus renders a few large windows, and one that is short of audio a quick one.

Every window renders 10 frames of decoder context on each side and throws them away, so a window
of 16 frames costs 36 frames of work, one of 32 costs 52 and one of 256 costs 276: small windows
waste capacity, which a machine that is behind does not have; hence the floor of 32 after the
first window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["WindowPolicy"]


@dataclass(frozen=True)
class WindowPolicy:
    first_frames: int = 16
    max_frames: int = 256
    later_frames: int = 32
    render_share: float = 0.5  # of the audio in hand that one window's render time may take

    def __post_init__(self) -> None:
        if not 1 <= self.first_frames <= self.max_frames:
            raise ValueError("need 1 <= first_frames <= max_frames")
        if not 1 <= self.later_frames <= self.max_frames:
            raise ValueError("need 1 <= later_frames <= max_frames")
        if not 0 < self.render_share <= 1:
            raise ValueError("render_share must be in (0, 1]")

    def size(self, previous: int, lead_s: float | None, render_s: Callable[[int], float]) -> int:
        """Frames of the next window, given the last one's size (0: none yet), how far the
        stream is ahead of its listener (None: no audio yet) and the estimated render time of a
        window of a given number of frames."""
        if previous == 0 or lead_s is None:
            return self.first_frames
        size = self.later_frames
        budget = self.render_share * lead_s
        while size * 2 <= self.max_frames and render_s(size * 2) <= budget:
            size *= 2
        return size

    def window(self, start: int, end: int, size: int) -> tuple[int, int]:
        """The window of ``size`` frames from ``start``; a short tail is folded into it, since a
        separate window would pay a whole context on each side for a few frames."""
        stop = min(end, start + size)
        if end - stop < self.first_frames // 2:
            stop = end
        return start, stop
