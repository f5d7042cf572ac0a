"""How long jobs take, learnt as they run: the scheduler's deadlines subtract a job's cost.

Two rates suffice: the text stage costs a fixed part plus a part per character of text, and a
render window costs per frame rendered, context frames included. Each rate is an exponentially
weighted average of what jobs really took on this machine, starting from figures measured on the
2-core dev machine (docs/benchmarks.md), so deadlines follow a slower or busier machine.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CostModel", "initial_costs"]

_WEIGHT = 0.1  # of each new observation in the running average


@dataclass
class CostModel:
    """Estimated seconds per prepare (``fixed + per_char * chars``) and per rendered frame."""

    prepare_fixed_s: float = 0.008
    prepare_per_char_s: float = 0.0006
    render_per_frame_s: float = 0.0004
    context_frames: int = 20  # decoder context rendered and dropped around every window
    # Whether a window after a stream's first may use every core when nothing else runs: an
    # engine that is not far faster than real time on one core needs it to keep up.
    wide_windows: bool = False

    def prepare_s(self, chars: int) -> float:
        return self.prepare_fixed_s + self.prepare_per_char_s * chars

    def render_s(self, frames: int) -> float:
        return self.render_per_frame_s * (frames + self.context_frames)

    def observe_prepare(self, chars: int, seconds: float) -> None:
        if chars > 0:
            rate = max(0.0, seconds - self.prepare_fixed_s) / chars
            self.prepare_per_char_s += _WEIGHT * (rate - self.prepare_per_char_s)

    def observe_render(self, frames: int, seconds: float) -> None:
        if frames > 0:
            rate = seconds / (frames + self.context_frames)
            self.render_per_frame_s += _WEIGHT * (rate - self.render_per_frame_s)


def initial_costs(engine: str) -> CostModel:
    """A fresh model for ``engine``'s jobs, from its figures on the 2-core dev machine: each
    engine learns its own rates, since a Kokoro frame costs about twenty Piper frames."""
    if engine == "kokoro":
        # The prosody stage and the decoder at one thread (docs/benchmarks.md, Kokoro); the
        # decoder's window has 4 frames of context on each side. One core renders Kokoro at
        # about real time, so a stream alone takes both for every window.
        return CostModel(
            prepare_fixed_s=0.02,
            prepare_per_char_s=0.0012,
            render_per_frame_s=0.009,
            context_frames=8,
            wide_windows=True,
        )
    return CostModel()
