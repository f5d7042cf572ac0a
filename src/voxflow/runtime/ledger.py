"""Where the scheduler's CPU time goes: its jobs' CPU seconds by what each job was for.

The calls benchmark divides a server's CPU time by the audio its listeners heard; this ledger
says which part of that the engine's jobs take, so that the rest (encoding, the protocols, the
event loop, the threads) can be told apart from it (``voxflow_cpu_seconds_total``,
docs/benchmarks.md#where-the-cpu-goes). A job is counted once, when its result comes back:

* a text stage, a *lead*'s (the first words of a sentence still arriving, whose takeover
  renders the sentence again) apart from the others';
* a window, a lead's apart again, and of every window the share its decoder context takes (the
  frames rendered on each side and thrown away), as the engine's cost model estimates it.

A job is counted at its own thread's CPU time: one that ran alone on several cores also took
some of ONNX Runtime's pool threads, which the process's CPU time holds and the ledger does not
(``voxflow_cpu_seconds_total{part="other"}``). Pure: the scheduler updates it under its lock.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WorkLedger"]


@dataclass
class WorkLedger:
    text_stage_s: float = 0.0
    lead_text_stage_s: float = 0.0
    window_s: float = 0.0  # windows of whole segments and takeovers, their context included
    lead_window_s: float = 0.0
    context_s: float = 0.0  # of both kinds of window: the decoder context's estimated share
    rendered_audio_s: float = 0.0  # audio the windows gave (leads' included)

    def text_stage(self, cpu_s: float, lead: bool) -> None:
        if lead:
            self.lead_text_stage_s += cpu_s
        else:
            self.text_stage_s += cpu_s

    def window(
        self,
        cpu_s: float,
        lead: bool,
        frames: int,
        context_frames: int,
        audio_s: float,
    ) -> None:
        """A window of ``frames`` (and ``context_frames`` of context, by the cost model)."""
        if lead:
            self.lead_window_s += cpu_s
        else:
            self.window_s += cpu_s
        if frames + context_frames > 0:
            self.context_s += cpu_s * context_frames / (frames + context_frames)
        self.rendered_audio_s += audio_s

    def snapshot(self) -> WorkLedger:
        return WorkLedger(
            self.text_stage_s,
            self.lead_text_stage_s,
            self.window_s,
            self.lead_window_s,
            self.context_s,
            self.rendered_audio_s,
        )

    @property
    def jobs_s(self) -> float:
        return self.text_stage_s + self.lead_text_stage_s + self.window_s + self.lead_window_s
