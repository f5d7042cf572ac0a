"""How large the scheduler's next render window is: small while a stream has little audio in
hand (fast first audio, fast recovery), doubling while it stays comfortably ahead of playback
(fewer windows, less context rendered and thrown away at their edges)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WindowPolicy"]


@dataclass(frozen=True)
class WindowPolicy:
    first_frames: int = 16
    max_frames: int = 256
    grow_lead_s: float = 0.25

    def __post_init__(self) -> None:
        if not 1 <= self.first_frames <= self.max_frames:
            raise ValueError("need 1 <= first_frames <= max_frames")
        if self.grow_lead_s < 0:
            raise ValueError("grow_lead_s must be >= 0")

    def size(self, previous: int, lead_s: float | None) -> int:
        """Frames of the next window, given the last one's size (0: none yet) and how far the
        stream is ahead of its listener (None: no audio yet)."""
        if previous == 0 or lead_s is None or lead_s < self.grow_lead_s:
            return self.first_frames
        return min(self.max_frames, previous * 2)

    def window(self, start: int, end: int, size: int) -> tuple[int, int]:
        """The window of ``size`` frames from ``start``; a short tail is folded into it, since a
        separate window would pay a whole context on each side for a few frames."""
        stop = min(end, start + size)
        if end - stop < self.first_frames // 2:
            stop = end
        return start, stop
