"""A context's listener, as the server pictures it: audio plays at real time from its arrival.

The model is the player of a voice agent with no buffer of its own (Pipecat's, LiveKit's): the
first chunk plays when it is sent, each next one right after the one before, and a chunk sent
after the audio before it has finished playing starts a new *run* (the listener heard silence in
between). Pure, with the time passed in: what matters is when the audio sent so far runs out.
"""

from __future__ import annotations

__all__ = ["ListenerClock"]


class ListenerClock:
    def __init__(self) -> None:
        self._run_start: float | None = None
        self._run_s = 0.0

    @property
    def started(self) -> bool:
        return self._run_start is not None

    def sent(self, at: float, seconds: float) -> None:
        """``seconds`` of audio went out at ``at`` (times must not go back)."""
        if seconds <= 0:
            return
        if self._run_start is None or at > self._run_start + self._run_s:
            self._run_start = at
            self._run_s = 0.0
        self._run_s += seconds

    def runs_out_at(self) -> float | None:
        """When the audio sent so far will have played (None: none sent yet)."""
        if self._run_start is None:
            return None
        return self._run_start + self._run_s

    def in_hand_s(self, now: float) -> float:
        """Audio sent but not played yet at ``now``."""
        end = self.runs_out_at()
        return 0.0 if end is None else max(0.0, end - now)
