"""``voxflow bench``'s report: plain-text tables (voxflow, the peer, and their ratios) and JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from voxflow_bench.memory import HttpResult, MemoryResult
from voxflow_bench.options import BenchOptions
from voxflow_bench.results import CancelResult, Capacity, Level, Section
from voxflow_bench.stats import Distribution, ratio

__all__ = ["BenchReport", "ServerReport", "format_report"]


@dataclass(frozen=True)
class ServerReport:
    """One server's sections (voxflow's, or the Wyoming peer's)."""

    target: str
    name: str
    full_text: Section | None
    tokens: Section | None  # None: not run, or the peer cannot stream text
    concurrency: tuple[Level, ...]
    streaming: bool = True

    def as_dict(self) -> dict[str, object]:
        return {
            "target": self.target,
            "name": self.name,
            "streaming": self.streaming,
            "full_text": None if self.full_text is None else self.full_text.as_dict(),
            "tokens": None if self.tokens is None else self.tokens.as_dict(),
            "concurrency": [level.as_dict() for level in self.concurrency],
        }


@dataclass(frozen=True)
class BenchReport:
    options: BenchOptions
    voxflow: ServerReport
    cancel: CancelResult | None
    capacity: Capacity | None
    peer: ServerReport | None
    wall_s: float
    memory: MemoryResult | None = None
    http: HttpResult | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "options": self.options.as_dict(),
            "voxflow": self.voxflow.as_dict(),
            "cancel": None if self.cancel is None else self.cancel.as_dict(),
            "capacity": None if self.capacity is None else self.capacity.as_dict(),
            "peer": None if self.peer is None else self.peer.as_dict(),
            "memory": None if self.memory is None else self.memory.as_dict(),
            "http": None if self.http is None else self.http.as_dict(),
            "wall_s": round(self.wall_s, 1),
        }


def _ms(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    # The first column is a label: left-aligned; the rest are numbers: right-aligned.
    lines = []
    for row in [header, *rows]:
        cells = [
            row[0].ljust(widths[0]),
            *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)),
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _stats(d: Distribution) -> list[str]:
    return [_ms(d.p50), _ms(d.p95), _ms(d.p99), _ms(d.max)]


def _ratios(a: Distribution, b: Distribution) -> list[str]:
    return [
        _ms(ratio(x, y), 2)
        for x, y in ((a.p50, b.p50), (a.p95, b.p95), (a.p99, b.p99), (a.max, b.max))
    ]


def _section_rows(label: str, section: Section, ready: bool) -> list[str]:
    d = section.ready_ms if ready else section.ttfa_ms
    return [
        label,
        str(len(section.runs)),
        str(section.errors),
        *_stats(d),
        "-" if ready else _ms(section.server_ttfa_ms.p50),
        str(section.underruns),
        _ms(section.underrun_ms, 0),
    ]


_HEADER = ["", "runs", "err", "p50", "p95", "p99", "max", "server p50", "underruns", "ms"]


def _compare(
    voxflow: Section, peer: Section | None, peer_name: str, ready: bool = False
) -> list[str]:
    rows = [_section_rows("voxflow", voxflow, ready)]
    if peer is not None:
        rows.append(_section_rows(peer_name, peer, ready))
        a = voxflow.ready_ms if ready else voxflow.ttfa_ms
        b = peer.ready_ms if ready else peer.ttfa_ms
        rows.append(["voxflow / peer", "", "", *_ratios(a, b), "", "", ""])
    return _table(_HEADER, rows)


def _worst(label: str, section: Section) -> str:
    items = ", ".join(
        f"{w.reply} ({w.ttfa_ms:.0f} ms, first sentence {w.first_sentence_chars})"
        for w in section.worst()
    )
    return f"  worst {label}: {items or '-'}"


def format_report(report: BenchReport) -> str:
    """The report as plain-text tables, one section per measurement."""
    o = report.options
    v, p = report.voxflow, report.peer
    peer_name = "-" if p is None else f"peer {p.name}"
    lines = [
        f"voxflow server bench: {v.target}"
        + ("" if p is None else f"; peer {p.name} at {p.target}"),
        f"corpus {len(o.replies)} replies, format {o.output_format}, voice {o.voice or 'default'}, "
        f"playout buffer {o.playout_buffer_ms:g} ms, wall {report.wall_s:.1f} s",
        "TTFA in ms on the client's clock; underruns with the playout buffer above",
    ]
    if v.full_text is not None:
        lines += ["", f"1. Full text (start + text + end, {o.repeats} run(s) per reply; TTFA ms)"]
        lines += _compare(v.full_text, None if p is None else p.full_text, peer_name)
        lines.append(_worst("voxflow", v.full_text))
        if p is not None and p.full_text is not None:
            lines.append(_worst(peer_name, p.full_text))
    if v.tokens is not None:
        lines += [
            "",
            f"2. LLM tokens at {o.token_rate:g}/s (~4 characters a token; first audio ms after "
            "the first token)",
        ]
        peer_tokens = None if p is None else p.tokens
        lines += _compare(v.tokens, peer_tokens, peer_name)
        lines.append(
            "   after the token that made the first segment certain (the earliest the server "
            "could start):"
        )
        lines += _compare(v.tokens, peer_tokens, peer_name, ready=True)
        lines.append(_worst("voxflow", v.tokens))
        if p is not None and not p.streaming:
            lines.append(f"  {peer_name} does not support streaming text (synthesize-start)")
    if report.cancel is not None:
        c = report.cancel
        lines += ["", f"3. Cancel (barge-in after {o.cancel_after_ms:g} ms of audio arrived; ms)"]
        lines += _table(
            ["", "runs", "err", "missed", "latency p50", "p95", "server p50", "p95", "after"],
            [
                [
                    "cancel",
                    str(c.runs),
                    str(c.errors),
                    str(c.missed),
                    _ms(c.client_latency_ms.p50),
                    _ms(c.client_latency_ms.p95),
                    _ms(c.server_latency_ms.p50, 2),
                    _ms(c.server_latency_ms.p95, 2),
                    str(c.audio_after_cancelled),
                ]
            ],
        )
    if v.concurrency:
        lines += [
            "",
            f"4. Concurrency (N connections start a reply at the same moment, {o.rounds} rounds; "
            "TTFA ms)",
        ]
        lines += _levels(v.concurrency, () if p is None else p.concurrency, peer_name)
    if report.capacity is not None:
        cap = report.capacity
        failing = cap.first_failing
        lines += ["", "5. Capacity (concurrency levels upward until one underruns or fails)"]
        lines += _levels(cap.levels, (), peer_name)
        lines.append(
            f"  largest N with 0 underruns and 0 errors: {cap.largest_clean or '-'}"
            + (
                ""
                if failing is None
                else f"; first failing N = {failing.connections}: {failing.section.underruns} "
                f"underruns ({failing.section.underrun_ms:.0f} ms), "
                f"{failing.section.errors} errors, TTFA p95 {_ms(failing.section.ttfa_ms.p95)}"
            )
        )
    if report.memory is not None:
        lines += [
            "",
            "6. Memory (the server's resident size, MiB, after each request and 1 s idle)",
        ]
        lines += _memory(report.memory)
    if report.http is not None:
        h = report.http
        lines += [
            "",
            f"7. HTTP (POST /v1/audio/speech, {h.chars:,} characters, pcm): wall {h.wall_s:.2f} s "
            f"for {h.audio_s:.1f} s of audio = {h.ratio:.3f} of real time; first bytes after "
            f"{1000 * h.first_byte_s:.0f} ms",
        ]
    return "\n".join(lines)


def _memory(m: MemoryResult) -> list[str]:
    rows = [["warm baseline", f"{m.baseline_mib:.0f}", ""]]
    rows += [[name, f"{mib:.0f}", f"{mib - m.baseline_mib:+.0f}"] for name, mib in m.after_mib]
    rows.append(
        [
            f"{m.busy_streams} streams at once (peak)",
            f"{m.busy_peak_mib:.0f}",
            f"{m.busy_peak_mib - m.baseline_mib:+.0f} ({m.per_stream_mib:.1f} per stream)",
        ]
    )
    rows.append(
        ["after them", f"{m.after_busy_mib:.0f}", f"{m.after_busy_mib - m.baseline_mib:+.0f}"]
    )
    for name, mib in (
        ("the same, not read (peak)", m.stopped_peak_mib),
        ("  held while not read", m.stopped_held_mib),
        ("  after its client went", m.after_stopped_mib),
    ):
        rows.append([name, f"{mib:.0f}", f"{mib - m.baseline_mib:+.0f}"])
    return _table(["", "RSS", "vs baseline"], rows)


def _levels(voxflow: Sequence[Level], peer: Sequence[Level], peer_name: str) -> list[str]:
    by_n = {level.connections: level for level in peer}
    rows: list[list[str]] = []
    for level in voxflow:
        s = level.section
        rows.append(
            [
                f"{level.connections} voxflow",
                str(len(s.runs)),
                str(s.errors),
                *_stats(s.ttfa_ms),
                _ms(s.server_ttfa_ms.p50),
                str(s.underruns),
                _ms(s.underrun_ms, 0),
                "-" if s.max_misses is None else str(s.max_misses),
            ]
        )
        other = by_n.get(level.connections)
        if other is not None:
            t = other.section
            rows.append(
                [
                    f"{level.connections} {peer_name}",
                    str(len(t.runs)),
                    str(t.errors),
                    *_stats(t.ttfa_ms),
                    "-",
                    str(t.underruns),
                    _ms(t.underrun_ms, 0),
                    "-",
                ]
            )
            rows.append(
                [
                    f"{level.connections} ratio",
                    "",
                    "",
                    *_ratios(s.ttfa_ms, t.ttfa_ms),
                    "",
                    "",
                    "",
                    "",
                ]
            )
    return _table([*_HEADER, "max misses"], rows)
