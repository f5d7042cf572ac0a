"""One level of the calls benchmark: N calls at once for a while, and what their listeners heard.

Each call runs its script (``plan``) on one line (``lines``), turn after turn, until the level's
time is up; a turn under way then finishes. The server's processes are sampled (``process``)
for CPU time, over the whole level, and resident memory, every second; a voxflow server's
``/metrics`` just before and after the level say where its CPU went (``cpu``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from voxflow_bench.calls.cpu import CpuBreakdown, scrape
from voxflow_bench.calls.lines import Line
from voxflow_bench.calls.plan import CallPattern, CallScript
from voxflow_bench.calls.process import ProcessSample, sample
from voxflow_bench.calls.turn import TurnResult, run_turn
from voxflow_bench.corpus import Reply
from voxflow_bench.stats import Distribution

__all__ = ["LevelResult", "ServiceLevel", "run_level"]

log = logging.getLogger(__name__)

_RSS_EVERY_S = 1.0


@dataclass(frozen=True)
class ServiceLevel:
    """What a level must keep to count towards capacity."""

    ttfa_p95_ms: float = 350.0
    gap_share: float = 0.005  # gap time per audio time heard
    refusals: int = 0
    quiet_gaps: int = 0  # silences on the wire past the server's bound (``TurnResult``)


@dataclass(frozen=True)
class LevelResult:
    server: str
    calls: int
    seconds: float
    turns: tuple[TurnResult, ...]
    cpu_s: float | None
    rss_start_mib: float | None
    rss_peak_mib: float | None
    client_cpu_s: float = 0.0  # what the benchmark itself used (it may share the machine)
    cpu_breakdown: CpuBreakdown | None = None  # the server's own split of its CPU (``cpu``)

    @property
    def admitted(self) -> tuple[TurnResult, ...]:
        return tuple(t for t in self.turns if t.admitted)

    @property
    def refused(self) -> tuple[TurnResult, ...]:
        return tuple(t for t in self.turns if t.outcome == "refused")

    @property
    def failed(self) -> tuple[TurnResult, ...]:
        return tuple(t for t in self.turns if not t.admitted and t.outcome != "refused")

    @property
    def ttfa_ms(self) -> Distribution:
        return Distribution.of(t.ttfa_ms for t in self.admitted if t.ttfa_ms is not None)

    @property
    def refusal_ms(self) -> Distribution:
        return Distribution.of(t.refusal_ms for t in self.refused if t.refusal_ms is not None)

    @property
    def turns_with_gap(self) -> int:
        """Turns whose listener ran dry, or whose audio stopped coming for longer than the
        server's bound before it had all come (a quiet gap)."""
        return sum(1 for t in self.admitted if t.gaps or t.quiet_gaps)

    @property
    def quiet_gaps(self) -> int:
        return sum(t.quiet_gaps for t in self.admitted)

    @property
    def longest_quiet_ms(self) -> float:
        return max((t.longest_quiet_ms for t in self.admitted), default=0.0)

    @property
    def heard_s(self) -> float:
        return sum(t.heard_ms for t in self.admitted) / 1000.0

    @property
    def audio_s(self) -> float:
        return sum(t.audio_ms for t in self.admitted) / 1000.0

    @property
    def gap_share(self) -> float:
        heard = sum(t.heard_ms for t in self.admitted)
        return sum(t.gap_ms for t in self.admitted) / heard if heard else 0.0

    @property
    def starved_gap_share(self) -> float:
        """Gap time in LLM pauses (the text's, not the server's) per audio time heard."""
        heard = sum(t.heard_ms for t in self.admitted)
        return sum(t.starved_gap_ms for t in self.admitted) / heard if heard else 0.0

    @property
    def longest_gap_ms(self) -> float:
        return max((t.longest_gap_ms for t in self.admitted), default=0.0)

    @property
    def cpu_per_heard_s(self) -> float | None:
        """The server's CPU seconds per second of audio its listeners heard (audio received
        after a barge-in, or never played, costs as much and counts for nothing)."""
        heard = self.heard_s
        return None if self.cpu_s is None or heard <= 0 else self.cpu_s / heard

    def within(self, goal: ServiceLevel) -> bool:
        p95 = self.ttfa_ms.p95
        return (
            bool(self.admitted)
            and not self.failed
            and p95 is not None
            and p95 <= goal.ttfa_p95_ms
            and self.gap_share <= goal.gap_share
            and self.quiet_gaps <= goal.quiet_gaps
            and len(self.refused) <= goal.refusals
        )

    def as_dict(self) -> dict[str, object]:
        def r(v: float | None, digits: int = 3) -> float | None:
            return None if v is None else round(v, digits)

        return {
            "server": self.server,
            "calls": self.calls,
            "seconds": r(self.seconds, 1),
            "turns": len(self.turns),
            "admitted": len(self.admitted),
            "barged": sum(1 for t in self.turns if t.outcome == "barged"),
            "refused": len(self.refused),
            "failed": len(self.failed),
            "failures": sorted({t.outcome for t in self.failed}),
            "ttfa_ms": self.ttfa_ms.as_dict(),
            "turns_with_gap": self.turns_with_gap,
            "gap_share": r(self.gap_share, 5),
            "starved_gaps": sum(t.starved_gaps for t in self.admitted),
            "starved_gap_share": r(self.starved_gap_share, 5),
            "longest_gap_ms": r(self.longest_gap_ms, 1),
            "quiet_gaps": self.quiet_gaps,
            "longest_quiet_ms": r(self.longest_quiet_ms, 1),
            "refusal_ms": self.refusal_ms.as_dict(),
            "heard_s": r(self.heard_s, 1),
            "audio_s": r(self.audio_s, 1),
            "cpu_s": r(self.cpu_s, 2),
            "cpu_per_heard_s": r(self.cpu_per_heard_s, 4),
            "cpu_breakdown": None
            if self.cpu_breakdown is None
            else self.cpu_breakdown.as_dict(self.heard_s),
            "client_cpu_s": r(self.client_cpu_s, 2),
            "rss_start_mib": r(self.rss_start_mib, 1),
            "rss_peak_mib": r(self.rss_peak_mib, 1),
            "ttfa_ms_by_protocol": {
                protocol: Distribution.of(
                    t.ttfa_ms for t in self.admitted if t.protocol == protocol and t.ttfa_ms
                ).as_dict()
                for protocol in sorted({t.protocol for t in self.admitted})
            },
            "quiet_turns": [
                {"reply": t.reply, "protocol": t.protocol, "quiet_ms": round(t.longest_quiet_ms, 1)}
                for t in self.quiet_turns()
            ],
            "worst_gaps": [
                {"reply": t.reply, "protocol": t.protocol, "gap_ms": round(t.longest_gap_ms, 1)}
                for t in self.worst_gaps()
            ],
            "slowest_first_audio": [
                {"reply": t.reply, "protocol": t.protocol, "ttfa_ms": round(t.ttfa_ms or 0.0, 1)}
                for t in self.slowest_first_audio()
            ],
        }

    def worst_gaps(self, count: int = 5) -> tuple[TurnResult, ...]:
        """The turns with the longest gaps, longest first."""
        gapped = sorted((t for t in self.admitted if t.gaps), key=lambda t: -t.longest_gap_ms)
        return tuple(gapped[:count])

    def slowest_first_audio(self, count: int = 5) -> tuple[TurnResult, ...]:
        """The turns whose first audio came latest after their first token, latest first."""
        timed = sorted(
            (t for t in self.admitted if t.ttfa_ms is not None), key=lambda t: -(t.ttfa_ms or 0.0)
        )
        return tuple(timed[:count])

    def quiet_turns(self) -> tuple[TurnResult, ...]:
        """The turns with a quiet gap, the longest silence first."""
        quiet = sorted(
            (t for t in self.admitted if t.quiet_gaps), key=lambda t: -t.longest_quiet_ms
        )
        return tuple(quiet)


async def _call(
    index: int,
    line: Line,
    script: CallScript,
    level_start: float,
    stop_at: float,
    turns: list[TurnResult],
) -> None:
    ready_s = script.first_turn_s
    number = 0
    try:
        while True:
            start_s = script.start_at(ready_s)
            if level_start + start_s >= stop_at:
                return
            plan = script.next_turn()
            delay = level_start + start_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            result = await run_turn(line, f"call{index}-turn{number}", plan)
            number += 1
            turns.append(result)
            if not result.admitted and result.outcome != "refused":
                log.warning("call %d: turn %s: %s", index, plan.reply.name, result.outcome)
            ready_s = max(result.ended_at - level_start, start_s) + plan.caller_speech_s
    finally:
        await line.close()


async def run_level(
    server: str,
    calls: int,
    duration_s: float,
    make_line: Callable[[int], Line],
    pattern: CallPattern,
    replies: Sequence[Reply],
    pids: tuple[int, ...],
    metrics: str | None = None,
) -> LevelResult:
    """``calls`` calls for ``duration_s`` against ``server`` (a label), each on
    ``make_line(index)``; ``pids`` are the server's processes (empty: no CPU or RSS);
    ``metrics``: its ``/metrics`` URL, for the CPU breakdown (None: none taken)."""
    turns: list[TurnResult] = []
    peak: list[float] = []

    async def watch_rss() -> None:
        while True:
            now = sample(pids)
            if now is not None:
                peak.append(now.rss_bytes / 2**20)
            await asyncio.sleep(_RSS_EVERY_S)

    counters = None if metrics is None else await scrape(metrics)
    before: ProcessSample | None = sample(pids)
    start = time.monotonic()
    client_start = time.process_time()
    watcher = asyncio.create_task(watch_rss())
    try:
        async with asyncio.TaskGroup() as group:
            for index in range(calls):
                script = CallScript(index, pattern, replies)
                group.create_task(
                    _call(index, make_line(index), script, start, start + duration_s, turns)
                )
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    after = sample(pids)
    seconds = time.monotonic() - start
    cpu = None if before is None or after is None else after.cpu_s - before.cpu_s
    breakdown = None
    if metrics is not None and counters is not None:
        counters_after = await scrape(metrics)
        if counters_after is not None:
            breakdown = CpuBreakdown.between(counters, counters_after)
    return LevelResult(
        server=server,
        calls=calls,
        seconds=seconds,
        turns=tuple(turns),
        cpu_s=cpu,
        rss_start_mib=None if before is None else before.rss_bytes / 2**20,
        rss_peak_mib=max(peak, default=None),
        client_cpu_s=time.process_time() - client_start,
        cpu_breakdown=breakdown,
    )
