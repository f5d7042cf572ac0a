"""The calls benchmark's report: a table per server, the capacity, where the CPU goes, and the
curves as SVG."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from voxflow_bench.calls.cpu import PARTS
from voxflow_bench.calls.floor import EngineFloor
from voxflow_bench.calls.level import LevelResult
from voxflow_bench.calls.run import CallsReport
from voxflow_bench.calls.turn import QUIET_BOUND_S, TurnResult
from voxflow_bench.plot import Series, scatter_svg, stack_svg

__all__ = ["calls_plot", "cpu_section", "format_calls"]

_HEADER = (
    "calls",
    "turns",
    "refused",
    "TTFA p50",
    "p95",
    "p99",
    "turns w/ gap",
    "gap/audio",
    "longest gap",
    "quiet gaps",
    "longest quiet",
    "in LLM pauses",
    "refusal max",
    "CPU s/heard s",
    "RSS peak MiB",
    "kept",
)


def _ms(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _row(level: LevelResult, kept: bool) -> list[str]:
    ttfa = level.ttfa_ms
    admitted = len(level.admitted)
    failed = f" ({len(level.failed)} failed)" if level.failed else ""
    return [
        str(level.calls),
        f"{len(level.turns)}{failed}",
        str(len(level.refused)),
        _ms(ttfa.p50),
        _ms(ttfa.p95),
        _ms(ttfa.p99),
        f"{level.turns_with_gap} of {admitted}",
        f"{100 * level.gap_share:.2f}%",
        _ms(level.longest_gap_ms),
        str(level.quiet_gaps),
        _ms(level.longest_quiet_ms),
        f"{100 * level.starved_gap_share:.2f}%",
        _ms(level.refusal_ms.max, 1),
        _ms(level.cpu_per_heard_s, 3),
        _ms(level.rss_peak_mib),
        "yes" if kept else "no",
    ]


def _table(rows: Sequence[Sequence[str]], header: Sequence[str] = _HEADER) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        "  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]


_PART_NAMES = {
    "text_stage": "text stage",
    "lead_text_stage": "lead text",
    "windows": "windows",
    "lead_windows": "lead windows",
    "scheduling": "scheduling",
    "encode": "encode",
    "event_loop": "event loop",
    "other": "other",
}
_AUDIO_HEADER = ("rendered s", "received s", "heard s", "not heard")


def _cpu_header(floor: EngineFloor | None) -> tuple[str, ...]:
    ratio = ("x floor",) if floor is not None else ()
    parts = tuple(_PART_NAMES[p] for p in PARTS)
    return ("calls", *parts, "total", "context", *ratio, *_AUDIO_HEADER)


def _cpu_row(level: LevelResult, floor: EngineFloor | None) -> list[str] | None:
    """``level``'s breakdown per heard second (None: no breakdown)."""
    cpu = level.cpu_breakdown
    if cpu is None:
        return None
    per = cpu.per(level.heard_s)
    figures = [_ms(None if per is None else per.get(p), 4) for p in (*PARTS, "total", "context")]
    if floor is not None:
        ratio = None if per is None or floor.per_audio_s <= 0 else per["total"] / floor.per_audio_s
        figures.append("-" if ratio is None else f"{ratio:.2f}x")
    rendered = cpu.rendered_audio_s
    unheard = 100 * (rendered - level.heard_s) / rendered if rendered > 0 else None
    return [
        str(level.calls),
        *figures,
        f"{rendered:.1f}",
        f"{level.audio_s:.1f}",
        f"{level.heard_s:.1f}",
        "-" if unheard is None else f"{unheard:.1f}%",
    ]


def cpu_section(levels: Sequence[LevelResult], floor: EngineFloor | None = None) -> list[str]:
    """Where each level's CPU went, per heard second, with the audio accounting (no lines
    when no level has a breakdown: a server without the metrics)."""
    rows = [row for level in levels if (row := _cpu_row(level, floor)) is not None]
    if not rows:
        return []
    lines = ["", "  where the CPU goes (CPU s per heard audio s)"]
    lines += _table(rows, _cpu_header(floor))
    lines.append(
        "  from the server's /metrics; context: the windows' decoder context (part of both kinds "
        "of window); not heard: share of the rendered audio no listener heard (barged in after "
        "it was rendered ahead, leads whose takeovers replaced them)"
        + ("; x floor: total over the engine floor" if floor is not None else "")
    )
    return lines


def format_calls(report: CallsReport) -> str:
    o = report.options
    p = o.pattern
    goal = o.service
    lines = [
        f"voxflow calls bench: {report.url}" + (f"; peer at {report.peer}" if report.peer else ""),
        f"{report.replies} replies, {p.token_rate:g} LLM tokens/s, {o.seconds:g} s a level, "
        f"protocols {', '.join(o.protocols)}; caller speaks {p.caller_speech_s[0]:g} to "
        f"{p.caller_speech_s[1]:g} s; {100 * p.barge_in_share:.0f}% of turns barged in; "
        f"{100 * p.llm_pause_share:.0f}% of replies with a mark to pause at pause once; "
        f"burstiness {p.burstiness:g}",
        "audio played at real time from its first chunk, no client buffer; TTFA in ms from the "
        "first token; gaps in an LLM pause (the listener had heard all the text) counted apart; "
        f"a quiet gap: no audio on the wire for over {QUIET_BOUND_S:g} s before a turn's end",
        f"service level: TTFA p95 <= {goal.ttfa_p95_ms:g} ms, gaps <= {100 * goal.gap_share:g}% "
        f"of audio, at most {goal.quiet_gaps} quiet gaps and {goal.refusals} refusals",
    ]
    if report.floor is not None:
        lines.append(report.floor.line())
    lines += ["", "voxflow"]
    lines += _table([_row(level, level.within(goal)) for level in report.voxflow])
    lines.append(f"  capacity: {_ms(report.capacity)} calls")
    lines += cpu_section(report.voxflow, report.floor)
    if report.peer_levels:
        lines += ["", "peer"]
        lines += _table([_row(level, level.within(goal)) for level in report.peer_levels])
        lines.append(f"  capacity: {_ms(report.peer_capacity)} calls")
        lines += cpu_section(report.peer_levels, report.floor)
    gaps = _named(report, LevelResult.worst_gaps, "longest_gap_ms")
    if gaps:
        lines += ["", "longest voxflow gaps: " + ", ".join(gaps[:8])]
    quiet = _named(report, LevelResult.quiet_turns, "longest_quiet_ms")
    if quiet:
        lines += ["", "voxflow quiet gaps: " + ", ".join(quiet[:8])]
    # A protocol that buffers text by its own rules (ElevenLabs' chunk schedule, Deepgram's
    # Flush) starts a short reply only at its end: this names them.
    slowest = _named(report, lambda level: level.slowest_first_audio(count=2), "ttfa_ms")
    if slowest:
        lines += ["", "slowest voxflow first audio: " + ", ".join(slowest[:8])]
    return "\n".join(lines)


def _named(
    report: CallsReport, turns_of: Callable[[LevelResult], Sequence[TurnResult]], figure: str
) -> list[str]:
    """Each of voxflow's levels' turns that ``turns_of`` picks, named with its ``figure`` (a
    duration in ms of ``TurnResult``)."""
    return [
        f"{t.reply} ({t.protocol}, {getattr(t, figure):.0f} ms at {level.calls} calls)"
        for level in report.voxflow
        for t in turns_of(level)
    ]


def _series(label: str, levels: Sequence[LevelResult], value: str) -> Series:
    points = []
    for level in levels:
        y = level.ttfa_ms.p95 if value == "ttfa" else 100 * level.gap_share
        if y is not None:
            points.append((float(level.calls), y))
    return Series(label, tuple(points), connect=True)


def calls_plot(report: CallsReport) -> str:
    """TTFA p95 and gap share against the number of calls, voxflow and the peer."""
    charts = []
    for value, title, axis in (
        ("ttfa", "First audio from the first token, p95", "ms"),
        ("gaps", "Gap time per audio time", "% of audio"),
    ):
        series = [_series("voxflow", report.voxflow, value)]
        if report.peer_levels:
            series.append(_series("wyoming-piper", report.peer_levels, value))
        charts.append(scatter_svg(title, "concurrent calls", axis, series))
    return stack_svg(charts)
