"""Aggregates of a ``voxflow bench-prosody`` run: per mode, distributions over cuts and replies.

Every figure is a distribution over cuts (or, for durations, over replies) of one mode. The
*inside* row covers every cut inside a sentence (clause and phrase cuts): the cuts the goals are
about. The *noise floor* row measures the reference against its re-seeded self at the same
boundaries: a difference no larger than that is one the voice makes on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from voxflow_bench.prosody.results import CutKind, CutMeasure, Mode, ProsodyReport, ReplyResult
from voxflow_bench.stats import percentile

__all__ = [
    "WORST",
    "CutFigures",
    "DurationFigures",
    "ModeSummary",
    "inside_cuts",
    "summarise",
]

WORST = 5  # replies listed per figure as the worst


@dataclass(frozen=True)
class CutFigures:
    """Distributions of one set of cut measures; None where there are no values."""

    cuts: int
    unmatched: int
    added_pause_p50: float | None
    added_pause_p95: float | None
    added_pause_max: float | None
    over_goal: float | None  # share of cuts whose added pause exceeds the goal
    f0_p50: float | None
    f0_p95: float | None
    end_f0_p50: float | None
    end_f0_p5: float | None
    energy_p50: float | None
    energy_p95: float | None
    f0_points: int
    f0_octave_errors: int

    @classmethod
    def of(cls, measures: Sequence[CutMeasure | None], pause_goal_ms: float) -> CutFigures:
        found = [m for m in measures if m is not None]
        pauses = [m.added_pause_ms for m in found]
        f0 = [m.f0_distance_st for m in found if m.f0_distance_st is not None]
        end = [m.end_f0_delta_st for m in found if m.end_f0_delta_st is not None]
        energy = [m.energy_distance_db for m in found if m.energy_distance_db is not None]
        return cls(
            cuts=len(found),
            unmatched=len(measures) - len(found),
            added_pause_p50=_pct(pauses, 50),
            added_pause_p95=_pct(pauses, 95),
            added_pause_max=max(pauses, default=None),
            over_goal=sum(p > pause_goal_ms for p in pauses) / len(pauses) if pauses else None,
            f0_p50=_pct(f0, 50),
            f0_p95=_pct(f0, 95),
            end_f0_p50=_pct(end, 50),
            end_f0_p5=_pct(end, 5),
            energy_p50=_pct(energy, 50),
            energy_p95=_pct(energy, 95),
            f0_points=sum(m.f0_points for m in found),
            f0_octave_errors=sum(m.f0_octave_errors for m in found),
        )


@dataclass(frozen=True)
class DurationFigures:
    """Duration ratios (streamed speech span / reference speech span) over replies."""

    replies: int
    p50: float | None
    min: float | None
    max: float | None
    total: float | None  # all streamed speech over all reference speech
    within_goal: int  # replies within the goal

    @classmethod
    def of(cls, ratios: Sequence[float], total: float | None, goal: float) -> DurationFigures:
        return cls(
            replies=len(ratios),
            p50=_pct(ratios, 50),
            min=min(ratios, default=None),
            max=max(ratios, default=None),
            total=total,
            within_goal=sum(abs(r - 1.0) <= goal for r in ratios),
        )


@dataclass(frozen=True)
class ModeSummary:
    mode: Mode
    rows: dict[str, CutFigures]  # inside, clause, phrase, noise floor, sentence end
    duration: DurationFigures
    floor_duration: DurationFigures
    worst: dict[str, list[tuple[str, float]]]  # figure -> (reply, value), worst first


def _pct(values: Sequence[float], q: float) -> float | None:
    return percentile(values, q) if values else None


def inside_cuts(
    result: ReplyResult,
) -> list[tuple[CutKind, CutMeasure | None, CutMeasure | None]]:
    """The cuts of a reply inside its sentences: (kind, measure, noise floor) of each."""
    return [
        (c.cut.kind, c.measure, c.floor) for c in result.cuts if c.cut.kind is not CutKind.SENTENCE
    ]


def summarise(report: ProsodyReport, mode: Mode) -> ModeSummary:
    """The figures of one mode."""
    o = report.options
    results = [r for r in report.replies if r.mode is mode]
    everything = [c for r in results for c in r.cuts]
    inside = [c for c in everything if c.cut.kind is not CutKind.SENTENCE]

    def of_kind(kind: CutKind) -> CutFigures:
        return CutFigures.of([c.measure for c in everything if c.cut.kind is kind], o.pause_goal_ms)

    rows = {
        "inside": CutFigures.of([c.measure for c in inside], o.pause_goal_ms),
        "clause": of_kind(CutKind.CLAUSE),
        "phrase": of_kind(CutKind.PHRASE),
        "noise floor": CutFigures.of([c.floor for c in inside], o.pause_goal_ms),
        # Sentence ends are no cut inside a sentence: shown apart, as a check (both renderings
        # join sentences the same way, so they should differ little).
        "sentence end": of_kind(CutKind.SENTENCE),
    }
    ratios = [r.duration_ratio for r in results if r.duration_ratio is not None]
    reference = sum(r.reference_span_s for r in results)
    total = sum(r.streamed_span_s for r in results) / reference if reference > 0 else None
    floor_ratios = [r.floor_duration_ratio for r in results if r.floor_duration_ratio is not None]
    return ModeSummary(
        mode=mode,
        rows=rows,
        duration=DurationFigures.of(ratios, total, o.duration_goal),
        floor_duration=DurationFigures.of(floor_ratios, None, o.duration_goal),
        worst=_worst(results),
    )


def _worst(results: Sequence[ReplyResult]) -> dict[str, list[tuple[str, float]]]:
    """Per figure, the replies that do worst on it (their worst cut inside a sentence)."""

    def ranked(
        value: Callable[[ReplyResult], float | None], badness: Callable[[float], float]
    ) -> list[tuple[str, float]]:
        scored = [(r.name, v) for r in results if (v := value(r)) is not None]
        scored.sort(key=lambda item: badness(item[1]), reverse=True)
        return scored[:WORST]

    def extreme(
        result: ReplyResult, field: Callable[[CutMeasure], float | None], pick: Callable[..., Any]
    ) -> float | None:
        values = [
            v for _, m, _ in inside_cuts(result) if m is not None and (v := field(m)) is not None
        ]
        return pick(values) if values else None

    return {
        "added pause ms": ranked(
            lambda r: extreme(r, lambda m: m.added_pause_ms, max), lambda v: v
        ),
        "F0 distance st": ranked(
            lambda r: extreme(r, lambda m: m.f0_distance_st, max), lambda v: v
        ),
        "end F0 delta st": ranked(
            lambda r: extreme(r, lambda m: m.end_f0_delta_st, min), lambda v: -v
        ),
        "energy distance dB": ranked(
            lambda r: extreme(r, lambda m: m.energy_distance_db, max), lambda v: v
        ),
        "duration ratio": ranked(lambda r: r.duration_ratio, lambda v: abs(v - 1.0)),
    }
