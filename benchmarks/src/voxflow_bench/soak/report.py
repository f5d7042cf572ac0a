"""``voxflow soak``'s results, its goals, and the text report printed at the end."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from voxflow_bench.soak.stats import (
    Outcomes,
    median_or_none,
    rss_slope_error_per_1000,
    rss_slope_per_1000,
)
from voxflow_bench.soak.wire import ServerStats
from voxflow_bench.stats import Distribution, ratio

__all__ = [
    "CapacityLevel",
    "CapacityResult",
    "FaultResult",
    "LoadResult",
    "SoakReport",
    "SoakResult",
    "SoakSample",
    "format_soak_report",
]

REFUSAL_GOAL_MS = 50.0
HEALTH_GOAL_MS = 100.0  # every /healthz round trip during a fault
SLOPE_GOAL_MIB = 1.0  # per 1,000 requests
# A fault's resident size after it, against before, once idle: the allocator moves a few MiB
# between two idle readings with nothing but the light load running (the baseline fault).
RSS_TOLERANCE_MIB = 16.0


@dataclass(frozen=True)
class LoadResult:
    stream_limit: int
    clients: int
    duration_s: float
    unloaded: Outcomes
    loaded: Outcomes
    ratio_goal: float

    @property
    def ttfa_ratio(self) -> float | None:
        return ratio(self.loaded.ttfa_ms.p95, self.unloaded.ttfa_ms.p95)


@dataclass(frozen=True)
class CapacityLevel:
    streams: int
    rounds: tuple[Outcomes, ...]
    unloaded_p95_ms: float | None
    ratio_goal: float

    @property
    def ttfa_p95_ms(self) -> float | None:
        return median_or_none(r.ttfa_ms.p95 for r in self.rounds)

    @property
    def underruns(self) -> float:
        return median_or_none(r.underruns for r in self.rounds) or 0.0

    @property
    def failures(self) -> float:
        """Median per round of requests that were not admitted and played (refusals too: a
        refused stream makes the level lighter than it says)."""
        return median_or_none(r.error_count + r.refused for r in self.rounds) or 0.0

    @property
    def passed(self) -> bool:
        p95, base = self.ttfa_p95_ms, self.unloaded_p95_ms
        fast = p95 is not None and base is not None and p95 <= self.ratio_goal * base
        return fast and self.underruns == 0 and self.failures == 0


@dataclass(frozen=True)
class CapacityResult:
    unloaded_p95_ms: float | None
    workers: int
    stream_limit: int
    levels: tuple[CapacityLevel, ...]

    @property
    def largest(self) -> int | None:
        passed = [level.streams for level in self.levels if level.passed]
        return max(passed) if passed else None

    @property
    def per_worker(self) -> float | None:
        return None if self.largest is None else self.largest / self.workers


@dataclass(frozen=True)
class FaultResult:
    name: str
    detail: str  # what happened to the fault's own sockets or clients
    seconds: float
    health_ms: Distribution  # /healthz round trips while it ran
    health_failures: int
    before: ServerStats
    after: ServerStats
    load: Outcomes  # the light load that streamed meanwhile


@dataclass(frozen=True)
class SoakSample:
    requests: int
    rss_mib: float
    open_fds: int
    threads: int | None
    tasks: int | None


@dataclass(frozen=True)
class SoakResult:
    requests: int
    concurrency: int
    wall_s: float
    warmup: int
    samples: tuple[SoakSample, ...]
    outcomes: Outcomes
    by_kind: tuple[tuple[str, Outcomes], ...]

    @property
    def slope_mib_per_1000(self) -> float | None:
        return rss_slope_per_1000([(s.requests, s.rss_mib) for s in self.samples], self.warmup)

    @property
    def slope_error_mib_per_1000(self) -> float | None:
        points = [(s.requests, s.rss_mib) for s in self.samples]
        return rss_slope_error_per_1000(points, self.warmup)


@dataclass(frozen=True)
class SoakReport:
    url: str
    machine: str
    wall_s: float
    load: LoadResult | None = None
    capacity: CapacityResult | None = None
    faults: tuple[FaultResult, ...] = ()
    soak: SoakResult | None = None

    def as_dict(self) -> dict[str, object]:
        data = dataclasses.asdict(self)
        data["goals"] = [list(goal) for goal in goals(self)]
        return data


# -- goals ----------------------------------------------------------------------------------------


def back_to_baseline(before: ServerStats, after: ServerStats) -> bool:
    """Descriptors, threads and loop tasks no more than before; the resident size within
    ``RSS_TOLERANCE_MIB`` (a figure the server does not report counts as unknown: not met)."""
    counts = ((before.threads, after.threads), (before.tasks, after.tasks))
    return (
        after.open_fds <= before.open_fds
        and all(b is not None and a is not None and a <= b for b, a in counts)
        and after.rss_mib <= before.rss_mib + RSS_TOLERANCE_MIB
    )


def goals(report: SoakReport) -> list[tuple[str, str, str]]:
    """(goal, measured, met / missed) for each goal the sections that ran can judge."""
    rows: list[tuple[str, str, str]] = []
    if report.load is not None:
        load = report.load
        rows.append(
            (
                f"admitted TTFA p95 / unloaded p95 <= {load.ratio_goal:g}",
                _num(load.ttfa_ratio, 2),
                _verdict(load.ttfa_ratio is not None and load.ttfa_ratio <= load.ratio_goal),
            )
        )
        worst = load.loaded.refusal_ms.max
        rows.append(
            (
                f"refusal latency max <= {REFUSAL_GOAL_MS:g} ms",
                f"{_num(worst)} ms ({load.loaded.refused} refusals)",
                _verdict(worst is not None and worst <= REFUSAL_GOAL_MS),
            )
        )
    if report.capacity is not None:
        cap = report.capacity
        rows.append(
            (
                "streams per worker (0 underruns, TTFA p95 <= goal)",
                f"{_num(cap.per_worker, 1)} (N = {cap.largest}, {cap.workers} workers)",
                "measured",
            )
        )
    for fault in report.faults:
        worst = fault.health_ms.max
        healthy = fault.health_failures == 0 and worst is not None and worst <= HEALTH_GOAL_MS
        rows.append(
            (
                f"{fault.name}: /healthz within {HEALTH_GOAL_MS:g} ms",
                f"{fault.health_failures} failed, max {_num(worst)} ms",
                _verdict(healthy),
            )
        )
        rows.append(
            (
                f"{fault.name}: back to baseline",
                _stats(fault.before, fault.after),
                _verdict(back_to_baseline(fault.before, fault.after)),
            )
        )
    if report.soak is not None:
        slope = report.soak.slope_mib_per_1000
        rows.append(
            (
                f"RSS slope < {SLOPE_GOAL_MIB:g} MiB per 1,000 requests",
                f"{_num(slope, 2)} +- {_num(report.soak.slope_error_mib_per_1000, 2)} MiB",
                _verdict(slope is not None and slope < SLOPE_GOAL_MIB),
            )
        )
        errors = report.soak.outcomes.error_count
        rows.append(("soak: no errors but intended refusals", str(errors), _verdict(errors == 0)))
    return rows


# -- the text report ------------------------------------------------------------------------------

_HEAD = f"{'':30}{'runs':>6}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}{'underruns':>11}{'ms':>8}"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def _row(label: str, dist: Distribution, underruns: int | None = None, ms: float = 0.0) -> str:
    cells = "".join(f"{_num(v):>9}" for v in (dist.p50, dist.p95, dist.p99, dist.max))
    tail = "" if underruns is None else f"{underruns:>11}{ms:>8.0f}"
    return f"  {label:<28}{dist.count:>6}{cells}{tail}"


def _statuses(outcomes: Outcomes) -> str:
    return ", ".join(f"{status} {count}" for status, count in outcomes.statuses) or "none"


def _ttfa_rows(label: str, outcomes: Outcomes) -> list[str]:
    rows = [_row(label, outcomes.ttfa_ms, outcomes.underruns, outcomes.underrun_ms)]
    if len(outcomes.ttfa_by_protocol) > 1:
        rows += [_row(f"  {name}", dist) for name, dist in outcomes.ttfa_by_protocol]
    return rows


def _load_lines(load: LoadResult) -> list[str]:
    lines = [
        f"1. Load: one request at a time, then {load.clients} back-to-back clients "
        f"({load.clients / load.stream_limit:g} x the cap of {load.stream_limit}) for "
        f"{load.duration_s:g} s (TTFA and refusal ms)",
        _HEAD,
        *_ttfa_rows("unloaded TTFA", load.unloaded),
        *_ttfa_rows("loaded TTFA (admitted)", load.loaded),
        _row("refused: to 429 / error", load.loaded.refusal_ms),
        f"  unloaded: {_statuses(load.unloaded)}; loaded: {_statuses(load.loaded)}",
        f"  streams with an underrun: {load.loaded.streams_with_underruns} of "
        f"{load.loaded.admitted}",
        f"  admitted p95 / unloaded p95 = {_num(load.ttfa_ratio, 2)} "
        f"(goal <= {load.ratio_goal:g}); refusal max {_num(load.loaded.refusal_ms.max)} ms "
        f"(goal <= {REFUSAL_GOAL_MS:g})",
    ]
    return lines


def _capacity_lines(cap: CapacityResult) -> list[str]:
    goal = None if not cap.levels else cap.levels[0].ratio_goal
    limit = None if cap.unloaded_p95_ms is None or goal is None else goal * cap.unloaded_p95_ms
    lines = [
        f"2. Capacity: N back-to-back streams, {len(cap.levels[0].rounds) if cap.levels else 0} "
        f"rounds each (median); pass: 0 underruns, no failure, TTFA p95 <= {_num(limit)} ms "
        f"({_num(goal, 1)} x unloaded p95 {_num(cap.unloaded_p95_ms)})",
        f"  {'N':>4}  {'round':<7}{'runs':>6}{'fail':>6}{'p50':>9}{'p95':>9}{'max':>9}"
        f"{'underruns':>11}{'ms':>8}",
    ]
    for level in cap.levels:
        for index, r in enumerate(level.rounds, start=1):
            fails = r.error_count + r.refused
            lines.append(
                f"  {level.streams:>4}  {index:<7}{r.total:>6}{fails:>6}{_num(r.ttfa_ms.p50):>9}"
                f"{_num(r.ttfa_ms.p95):>9}{_num(r.ttfa_ms.max):>9}{r.underruns:>11}"
                f"{r.underrun_ms:>8.0f}"
            )
        lines.append(
            f"  {level.streams:>4}  median: p95 {_num(level.ttfa_p95_ms)} ms, underruns "
            f"{level.underruns:g}, failures {level.failures:g}: "
            f"{'passed' if level.passed else 'FAILED'}"
        )
    lines.append(
        f"  largest N that passed: {cap.largest or '-'}; streams per worker = N / "
        f"{cap.workers} workers = {_num(cap.per_worker, 1)} (server cap {cap.stream_limit})"
    )
    return lines


def _stats(before: ServerStats, after: ServerStats) -> str:
    threads = f"{before.threads or '-'}->{after.threads or '-'}"
    tasks = f"{before.tasks or '-'}->{after.tasks or '-'}"
    return (
        f"RSS {before.rss_mib:.0f}->{after.rss_mib:.0f} MiB, fds {before.open_fds}->"
        f"{after.open_fds}, threads {threads}, loop tasks {tasks}"
    )


def _fault_lines(faults: tuple[FaultResult, ...]) -> list[str]:
    lines = [
        "3. Faults, each while a light load streams; /healthz round trips every 50 ms (ms)",
        f"  {'fault':<22}{'s':>5}{'probes':>8}{'fail':>6}{'p50':>8}{'p99':>8}{'max':>8}"
        f"{'load p95':>10}{'underruns':>11}",
    ]
    for f in faults:
        h = f.health_ms
        lines.append(
            f"  {f.name:<22}{f.seconds:>5.0f}{h.count:>8}{f.health_failures:>6}"
            f"{_num(h.p50):>8}{_num(h.p99):>8}{_num(h.max):>8}{_num(f.load.ttfa_ms.p95):>10}"
            f"{f.load.underruns:>11}"
        )
    for f in faults:
        lines.append(f"  {f.name}: {f.detail}; {_stats(f.before, f.after)}")
        if f.load.errors:
            lines.append(f"    light load errors: {_statuses(f.load)}")
    return lines


def _soak_lines(soak: SoakResult) -> list[str]:
    lines = [
        f"4. Soak: {soak.requests:,} mixed requests, {soak.concurrency} at once, in "
        f"{soak.wall_s:.0f} s; the server's figures after each block (idle)",
        f"  {'requests':>9}{'RSS MiB':>10}{'fds':>7}{'threads':>9}{'tasks':>7}",
    ]
    for s in soak.samples:
        threads = "-" if s.threads is None else str(s.threads)
        tasks = "-" if s.tasks is None else str(s.tasks)
        lines.append(f"  {s.requests:>9,}{s.rss_mib:>10.1f}{s.open_fds:>7}{threads:>9}{tasks:>7}")
    lines.append(
        f"  RSS slope after the first {soak.warmup:,}: {_num(soak.slope_mib_per_1000, 2)} MiB "
        f"per 1,000 requests, standard error {_num(soak.slope_error_mib_per_1000, 2)} "
        f"(goal < {SLOPE_GOAL_MIB:g})"
    )
    lines.append(f"  {_HEAD.strip()}")
    lines += [_row(kind, o.ttfa_ms, o.underruns, o.underrun_ms) for kind, o in soak.by_kind]
    for kind, o in soak.by_kind:
        lines.append(f"  {kind}: {_statuses(o)}")
    errors = ", ".join(f"{status} {n}" for status, n in soak.outcomes.errors) or "none"
    lines.append(f"  errors (not ok, refused, cancelled or vanished): {errors}")
    return lines


def format_soak_report(report: SoakReport) -> str:
    lines = [
        f"voxflow soak: {report.url}; {report.machine}; wall {report.wall_s:.0f} s",
        "TTFA on the client's clock, from the text (HTTP: the request) to the first audio; "
        "underruns behind a 150 ms player (PCM answers)",
        "",
    ]
    if report.load is not None:
        lines += [*_load_lines(report.load), ""]
    if report.capacity is not None:
        lines += [*_capacity_lines(report.capacity), ""]
    if report.faults:
        lines += [*_fault_lines(report.faults), ""]
    if report.soak is not None:
        lines += [*_soak_lines(report.soak), ""]
    rows = goals(report)
    if rows:
        width = max(len(goal) for goal, _, _ in rows)
        lines.append("Goals")
        lines += [
            f"  {goal:<{width}}  {measured:<28} {verdict}" for goal, measured, verdict in rows
        ]
    return "\n".join(lines).rstrip() + "\n"
