"""Plain-text tables and JSON of a ``voxflow bench-prosody`` run.

The figures come from ``prosody_summary`` (one ``ModeSummary`` per mode); this module only lays
them out, as a text report for people and as a JSON document with every measure for tools.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from voxflow_bench.prosody.results import CutKind, Mode, ProsodyReport, ReplyResult
from voxflow_bench.prosody.summary import WORST, ModeSummary, inside_cuts, summarise

__all__ = ["format_report", "report_dict"]


# -- text --------------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100.0 * value:.0f}%"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    body = [list(row) for row in rows]
    widths = [max(len(row[i]) for row in [list(header), *body]) for i in range(len(header))]
    lines = []
    # The first column is a label: left-aligned; the rest are numbers: right-aligned.
    for row in [list(header), *body]:
        numbers = zip(row[1:], widths[1:], strict=True)
        cells = [row[0].ljust(widths[0]), *(c.rjust(w) for c, w in numbers)]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def format_report(report: ProsodyReport) -> str:
    """The report as plain-text tables, one block per mode."""
    o = report.options
    noise = "off (noise_scale 0, noise_w 0)" if o.noise.value == "off" else f"seeded ({o.seed})"
    names = {r.name for r in report.replies}
    lines = [
        f"voxflow prosody bench: {len(names)} replies, voice {report.voice}, noise {noise}, "
        f"wall {report.wall_s:.1f} s",
        f"silence < {o.levels.silence_db:g} dBFS over {o.levels.frame_ms:g} ms frames; "
        f"{o.points_per_word} contour points per word; YIN {o.pitch.fmin_hz:g}-"
        f"{o.pitch.fmax_hz:g} Hz, threshold {o.pitch.threshold:g}",
        f"noise floor: the reference against itself, seed {o.seed} vs "
        f"{o.seed + o.floor_seed_offset} (the voice's own noise), at the same boundaries",
    ]
    for mode in o.modes:
        lines += ["", *_format_mode(report, summarise(report, mode))]
    return "\n".join(lines)


def _format_mode(report: ProsodyReport, summary: ModeSummary) -> list[str]:
    o = report.options
    sent = (
        "the whole reply in one message"
        if summary.mode is Mode.WHOLE
        else f"LLM-like pieces at {o.token_rate:g}/s"
    )
    lines = [f"== mode {summary.mode.value}: {sent}", "", "1. Cuts (streamed vs whole sentences)"]
    lines.append(
        "   pause: added silence, ms; F0: RMS semitones; end F0: streamed - reference at the end "
        "of the word before, st; energy: RMS dB"
    )
    header = [
        "cuts",
        "n",
        "unmatched",
        "pause p50",
        "p95",
        "max",
        f">{o.pause_goal_ms:g}ms",
        "F0 p50",
        "p95",
        "end F0 p50",
        "p5",
        "energy p50",
        "p95",
        "F0 pts",
        "octave",
    ]
    rows = []
    for label, f in summary.rows.items():
        rows.append(
            [
                label,
                str(f.cuts),
                str(f.unmatched),
                _num(f.added_pause_p50),
                _num(f.added_pause_p95),
                _num(f.added_pause_max),
                _share(f.over_goal),
                _num(f.f0_p50, 2),
                _num(f.f0_p95, 2),
                _num(f.end_f0_p50, 2),
                _num(f.end_f0_p5, 2),
                _num(f.energy_p50, 2),
                _num(f.energy_p95, 2),
                str(f.f0_points),
                str(f.f0_octave_errors),
            ]
        )
    lines += _table(header, rows)
    lines += ["", "2. Duration ratio (streamed speech span / reference speech span, per reply)"]
    lines += _table(
        ["", "replies", "p50", "min", "max", "total", f"within {100 * o.duration_goal:g}%"],
        [
            [
                label,
                str(d.replies),
                _num(d.p50, 3),
                _num(d.min, 3),
                _num(d.max, 3),
                _num(d.total, 3),
                str(d.within_goal),
            ]
            for label, d in (
                ("streamed", summary.duration),
                ("noise floor", summary.floor_duration),
            )
        ],
    )
    lines += ["", f"3. Worst replies (their worst cut inside a sentence; top {WORST})"]
    for figure, entries in summary.worst.items():
        listed = ", ".join(f"{name} ({value:.2f})" for name, value in entries) or "-"
        lines.append(f"  {figure}: {listed}")
    lines += ["", "4. Per reply"]
    lines += _table(
        [
            "reply",
            "chars",
            "pieces",
            "clause",
            "phrase",
            "sentence",
            "duration",
            "pause max",
            "F0 max",
            "end F0 min",
            "energy max",
        ],
        [_reply_row(r) for r in report.replies if r.mode is summary.mode],
    )
    inside = summary.rows["inside"]
    d = summary.duration
    pause_ok = inside.added_pause_p95 is not None and inside.added_pause_p95 <= o.pause_goal_ms
    lines += [
        "",
        "5. Goals (cuts inside sentences)",
        f"  added pause <= {o.pause_goal_ms:g} ms at 95% of cuts: p95 "
        f"{_num(inside.added_pause_p95)} ms, {_share(inside.over_goal)} over -> "
        f"{_verdict(pause_ok, inside.cuts)}",
        f"  duration within {100 * o.duration_goal:g}% for every reply: {d.within_goal} of "
        f"{d.replies} (min {_num(d.min, 3)}, max {_num(d.max, 3)}; corpus total "
        f"{_num(d.total, 3)}) -> {_verdict(d.within_goal == d.replies, d.replies)}",
    ]
    return lines


def _verdict(ok: bool, count: int) -> str:
    if count == 0:
        return "no data"
    return "ok" if ok else "FAIL"


def _reply_row(result: ReplyResult) -> list[str]:
    kinds = [c.cut.kind for c in result.cuts]
    measures = [m for _, m, _ in inside_cuts(result) if m is not None]

    def most(values: Iterable[float | None], pick: Callable[..., Any]) -> str:
        present = [v for v in values if v is not None]
        return _num(pick(present), 2) if present else "-"

    return [
        result.name,
        str(result.chars),
        str(result.pieces),
        str(kinds.count(CutKind.CLAUSE)),
        str(kinds.count(CutKind.PHRASE)),
        str(kinds.count(CutKind.SENTENCE)),
        _num(result.duration_ratio, 3),
        most((m.added_pause_ms for m in measures), max),
        most((m.f0_distance_st for m in measures), max),
        most((m.end_f0_delta_st for m in measures), min),
        most((m.energy_distance_db for m in measures), max),
    ]


# -- JSON --------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Dataclasses, enums and containers as JSON-ready values (floats rounded)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return round(value, 4)
    return value


def report_dict(report: ProsodyReport) -> dict[str, Any]:
    """Everything the run measured, ready for ``json.dumps``."""
    modes: dict[str, Any] = {}
    for mode in report.options.modes:
        summary = summarise(report, mode)
        replies = []
        for r in report.replies:
            if r.mode is not mode:
                continue
            entry = _plain(r)
            entry["duration_ratio"] = _plain(r.duration_ratio)
            for cut, result in zip(entry["cuts"], r.cuts, strict=True):
                cut["label"] = result.cut.label
                for side in ("measure", "floor"):
                    measure = getattr(result, side)
                    if measure is not None:
                        cut[side]["added_pause_ms"] = _plain(measure.added_pause_ms)
            replies.append(entry)
        modes[mode.value] = {
            "summary": _plain(
                {
                    "rows": summary.rows,
                    "duration": summary.duration,
                    "floor_duration": summary.floor_duration,
                    "worst": summary.worst,
                }
            ),
            "replies": replies,
        }
    return {
        "voice": report.voice,
        "wall_s": round(report.wall_s, 2),
        "options": _plain(report.options),
        "modes": modes,
    }
