"""``voxflow bench --calls``: the calls benchmark's levels, against voxflow and a Wyoming peer.

Each level runs N calls (``level``) against the server, then, with ``--peer``, the same N calls
(same scripts) against the peer, so that machine drift hits both alike. Calls take turns over
the protocols in ``protocols``; the peer speaks Wyoming only. The capacity is the largest N
whose level and every smaller one kept the service level. The report may carry the engine's
floor (``floor``), measured before the levels, for the CPU breakdown to be read against.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from voxflow_bench.calls.cpu import metrics_url
from voxflow_bench.calls.floor import EngineFloor
from voxflow_bench.calls.level import LevelResult, ServiceLevel, run_level
from voxflow_bench.calls.lines import LINES, PROTOCOLS, Line, open_line
from voxflow_bench.calls.plan import CallPattern
from voxflow_bench.calls.process import listening_pids
from voxflow_bench.corpus import Reply

__all__ = ["CallsOptions", "CallsReport", "capacity", "run_calls"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallsOptions:
    levels: tuple[int, ...]
    seconds: float = 60.0  # per level; turns under way at the end finish
    protocols: tuple[str, ...] = PROTOCOLS
    pattern: CallPattern = field(default_factory=CallPattern)
    service: ServiceLevel = field(default_factory=ServiceLevel)
    voice: str | None = None
    settle_s: float = 3.0  # between levels: the last level's streams end

    def __post_init__(self) -> None:
        if not self.levels or any(n < 1 for n in self.levels):
            raise ValueError("calls levels must be >= 1")
        if self.seconds <= 0 or self.settle_s < 0:
            raise ValueError("seconds must be > 0 and settle_s >= 0")
        unknown = set(self.protocols) - set(LINES)
        if not self.protocols or unknown:
            raise ValueError(f"protocols must be among {', '.join(LINES)}")

    def as_dict(self) -> dict[str, object]:
        return {
            "levels": list(self.levels),
            "seconds": self.seconds,
            "protocols": list(self.protocols),
            "pattern": self.pattern.as_dict(),
            "service_level": {
                "ttfa_p95_ms": self.service.ttfa_p95_ms,
                "gap_share": self.service.gap_share,
                "quiet_gaps": self.service.quiet_gaps,
                "refusals": self.service.refusals,
            },
            "voice": self.voice,
        }


def capacity(levels: Sequence[LevelResult], goal: ServiceLevel) -> int | None:
    """The largest N whose level and every smaller one kept ``goal`` (None: not even the
    smallest)."""
    best = None
    for level in sorted(levels, key=lambda r: r.calls):
        if not level.within(goal):
            break
        best = level.calls
    return best


@dataclass(frozen=True)
class CallsReport:
    url: str
    peer: str | None
    options: CallsOptions
    replies: int
    voxflow: tuple[LevelResult, ...]
    peer_levels: tuple[LevelResult, ...] = ()
    floor: EngineFloor | None = None  # ``--floor``: the engine alone on whole sentences

    @property
    def capacity(self) -> int | None:
        return capacity(self.voxflow, self.options.service)

    @property
    def peer_capacity(self) -> int | None:
        return capacity(self.peer_levels, self.options.service) if self.peer_levels else None

    def as_dict(self) -> dict[str, object]:
        return {
            "url": self.url,
            "peer": self.peer,
            "options": self.options.as_dict(),
            "replies": self.replies,
            "capacity": self.capacity,
            "peer_capacity": self.peer_capacity,
            "voxflow": [level.as_dict() for level in self.voxflow],
            "peer_levels": [level.as_dict() for level in self.peer_levels],
            "floor": None if self.floor is None else self.floor.as_dict(),
        }


def _pids(address: str) -> tuple[int, ...]:
    port = urlsplit(address).port
    host = urlsplit(address).hostname
    if port is None or host not in ("127.0.0.1", "localhost", "::1"):
        return ()  # not on this machine: no CPU or memory figures
    return listening_pids(port)


async def run_calls(
    url: str, options: CallsOptions, replies: Sequence[Reply], peer: str | None = None
) -> CallsReport:
    """Every level against ``url`` (and ``peer``, a Wyoming ``tcp://`` URI)."""
    pids = _pids(url)
    peer_pids = () if peer is None else _pids(peer)
    if not pids:
        log.warning("no local process listens on %s: CPU and memory are not measured", url)
    # One scrape of /metrics answers for one process: with several on the port, no breakdown.
    metrics = metrics_url(url) if len(pids) <= 1 else None
    if metrics is None:
        log.warning("%d processes listen on %s: no CPU breakdown from /metrics", len(pids), url)
    ours: list[LevelResult] = []
    theirs: list[LevelResult] = []
    protocols = options.protocols

    def ours_line(index: int) -> Line:
        return open_line(protocols[index % len(protocols)], url, options.voice)

    def peer_line(index: int) -> Line:
        assert peer is not None
        return open_line("wyoming", peer, None)

    for n in options.levels:
        level = await run_level(
            "voxflow", n, options.seconds, ours_line, options.pattern, replies, pids, metrics
        )
        ours.append(level)
        log.info("voxflow, %d calls: %s", n, _summary(level))
        await asyncio.sleep(options.settle_s)
        if peer is not None:
            level = await run_level(
                "peer", n, options.seconds, peer_line, options.pattern, replies, peer_pids
            )
            theirs.append(level)
            log.info("peer, %d calls: %s", n, _summary(level))
            await asyncio.sleep(options.settle_s)
    return CallsReport(url, peer, options, len(replies), tuple(ours), tuple(theirs))


def _summary(level: LevelResult) -> str:
    p95 = level.ttfa_ms.p95
    return (
        f"{len(level.turns)} turns, TTFA p95 {'-' if p95 is None else f'{p95:.0f}'} ms, "
        f"{level.turns_with_gap} with a gap ({100 * level.gap_share:.2f}% of audio, "
        f"{level.quiet_gaps} quiet), "
        f"{len(level.refused)} refused, {len(level.failed)} failed"
    )
