"""Engine-level benchmark: ``voxflow say`` figures per input, chunking strategy and render mode.

Both modes speak through ``voxflow.connection.speaker.LocalSpeaker``, the server's own synthesis
path (session, scheduler, windows, seams). Every case runs ``repeats`` times in one process after a
warm-up, and reports medians, so the streamed/``--no-stream`` ratios compare runs taken minutes
apart on the same machine state.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from voxflow import (
    ChunkingConfig,
    Engine,
    LocalSpeaker,
    SayStats,
    SessionConfig,
    StartOptions,
    Strategy,
    VoiceSettings,
)

SHORT = "Sure, I can help you with that now."
LONG_SENTENCE = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody in town will forget."
)
MULTI_SENTENCE = (
    "Thanks for calling the downtown clinic. Your appointment with Dr. Patel is confirmed for "
    "Tuesday at 3:30 p.m., and the visit should take about forty minutes. Please arrive ten "
    "minutes early so the front desk can update your insurance details. If you need to "
    "reschedule, just tell me a day that works better and I will check what is open. We also "
    "sent a reminder to the phone number on file, so you do not need to write anything down. "
    "Parking is free in the garage behind the building, and the entrance is on Maple Street. "
    "Is there anything else I can help you with today?"
)
INPUTS = {"short": SHORT, "long": LONG_SENTENCE, "multi": MULTI_SENTENCE}


@dataclass(frozen=True)
class CaseResult:
    """Medians of one (input, strategy, mode) case."""

    input_name: str
    chars: int
    strategy: str
    streamed: bool
    ttfa_ms: float
    synth_ms: float
    audio_ms: float
    rtf: float
    segments: int
    runs: int

    def as_dict(self) -> dict[str, object]:
        return {
            "input": self.input_name,
            "chars": self.chars,
            "chunking": self.strategy,
            "mode": "stream" if self.streamed else "no-stream",
            "ttfa_ms": round(self.ttfa_ms, 1),
            "synth_ms": round(self.synth_ms, 1),
            "audio_ms": round(self.audio_ms, 1),
            "rtf": round(self.rtf, 4),
            "segments": self.segments,
            "runs": self.runs,
        }


def _median_case(
    name: str, text: str, strategy: Strategy, streamed: bool, runs: list[SayStats]
) -> CaseResult:
    return CaseResult(
        input_name=name,
        chars=len(text),
        strategy=strategy.value,
        streamed=streamed,
        ttfa_ms=statistics.median(r.ttfa_ms for r in runs),
        synth_ms=statistics.median(r.synth_ms for r in runs),
        audio_ms=statistics.median(r.audio_ms for r in runs),
        rtf=statistics.median(r.rtf for r in runs),
        segments=runs[0].segments,
        runs=len(runs),
    )


def run_engine_bench(
    engine: Engine,
    voice: str,
    repeats: int = 5,
    inputs: dict[str, str] | None = None,
    strategies: tuple[Strategy, ...] = tuple(Strategy),
    progress: Callable[[str], None] | None = None,
) -> list[CaseResult]:
    """Run every case ``repeats`` times, seeded (the streamed mode may cut a lead, so its audio
    can differ from the sentence-by-sentence mode's at the takeover; nothing else differs).

    The streamed and ``--no-stream`` runs of a case alternate, so drift in the machine's speed
    hits both alike and their ratio stays meaningful.
    """
    chosen = inputs or INPUTS
    options = StartOptions(settings=VoiceSettings(seed=1))
    results: list[CaseResult] = []
    with (
        LocalSpeaker(engine, SessionConfig(voice)) as warm_up,
        LocalSpeaker(engine, SessionConfig(voice), streamed=False) as whole_warm_up,
    ):
        warm_up.say(SHORT, options)
        whole_warm_up.say(SHORT, options)
    for name, text in chosen.items():
        for strategy in strategies:
            if progress is not None:
                progress(f"{name} / {strategy.value}")
            config = SessionConfig(voice, chunking=ChunkingConfig(strategy=strategy))
            streamed: list[SayStats] = []
            whole: list[SayStats] = []
            with (
                LocalSpeaker(engine, config) as streaming,
                LocalSpeaker(engine, config, streamed=False) as sentence_by_sentence,
            ):
                for _ in range(repeats):
                    streamed.append(streaming.say(text, options).stats)
                    whole.append(sentence_by_sentence.say(text, options).stats)
            results.append(_median_case(name, text, strategy, True, streamed))
            results.append(_median_case(name, text, strategy, False, whole))
    return results


def summary(results: list[CaseResult]) -> dict[str, float]:
    """The two engine-level goals as ratios (see docs/benchmarks.md)."""
    by_key = {(r.input_name, r.strategy, r.streamed): r for r in results}
    out: dict[str, float] = {}
    default = by_key.get(("long", Strategy.ADAPTIVE.value, True))
    baseline = by_key.get(("long", Strategy.SENTENCE.value, False))
    if default is not None and baseline is not None:
        out["ttfa_long_default_over_sentence_no_stream"] = default.ttfa_ms / baseline.ttfa_ms
    ratios = [
        r.rtf / by_key[(r.input_name, r.strategy, False)].rtf
        for r in results
        if r.streamed and (r.input_name, r.strategy, False) in by_key
    ]
    if ratios:
        out["max_rtf_stream_over_no_stream"] = max(ratios)
        out["median_rtf_stream_over_no_stream"] = statistics.median(ratios)
    return out


def format_table(results: list[CaseResult]) -> str:
    """A Markdown table, ready for docs/benchmarks.md."""
    by_key = {(r.input_name, r.strategy, r.streamed): r for r in results}
    lines = [
        "| input | chars | chunking | mode | segments | TTFA ms | synth ms | audio ms | RTF "
        "| RTF / no-stream |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        mode = "stream" if r.streamed else "no-stream"
        partner = by_key.get((r.input_name, r.strategy, False))
        ratio = f"{r.rtf / partner.rtf:.2f}" if r.streamed and partner is not None else ""
        lines.append(
            f"| {r.input_name} | {r.chars} | {r.strategy} | {mode} | {r.segments} | "
            f"{r.ttfa_ms:.1f} | {r.synth_ms:.1f} | {r.audio_ms:.1f} | {r.rtf:.4f} | {ratio} |"
        )
    return "\n".join(lines)
