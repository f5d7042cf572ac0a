"""The pure arithmetic of ``voxflow soak``: outcomes folded into figures, the median of rounds,
and the least-squares slope of the resident size over requests."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from voxflow_bench.soak.clients import Outcome
from voxflow_bench.stats import Distribution

__all__ = [
    "Outcomes",
    "least_squares_slope",
    "median_or_none",
    "rss_slope_error_per_1000",
    "rss_slope_per_1000",
    "slope_standard_error",
]

# Outcomes that are what the soak asked for, not failures: a refusal past the cap, a barge-in,
# a client that left on purpose.
INTENDED = frozenset({"ok", "refused", "cancelled", "vanished"})


@dataclass(frozen=True)
class Outcomes:
    """A set of requests: the admitted ones' TTFA and underruns, the refused ones' latency, and
    everything else counted by kind."""

    total: int
    admitted: int
    refused: int
    ttfa_ms: Distribution
    refusal_ms: Distribution
    underruns: int
    underrun_ms: float
    streams_with_underruns: int
    statuses: tuple[tuple[str, int], ...]  # every status with its count, most common first
    ttfa_by_protocol: tuple[tuple[str, Distribution], ...]

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> Outcomes:
        runs = list(outcomes)
        played = [o for o in runs if o.ok]
        by_protocol: dict[str, list[float]] = {}
        for o in played:
            if o.ttfa_ms is not None:
                by_protocol.setdefault(o.protocol, []).append(o.ttfa_ms)
        return cls(
            total=len(runs),
            admitted=len(played),
            refused=sum(o.refused for o in runs),
            ttfa_ms=Distribution.of(o.ttfa_ms for o in played if o.ttfa_ms is not None),
            refusal_ms=Distribution.of(o.refusal_ms for o in runs if o.refusal_ms is not None),
            underruns=sum(o.underruns for o in played),
            underrun_ms=sum(o.underrun_ms for o in played),
            streams_with_underruns=sum(o.underruns > 0 for o in played),
            statuses=tuple(Counter(o.status for o in runs).most_common()),
            ttfa_by_protocol=tuple(
                (name, Distribution.of(values)) for name, values in sorted(by_protocol.items())
            ),
        )

    @property
    def errors(self) -> tuple[tuple[str, int], ...]:
        """The statuses that are failures (not ok, refused, cancelled or vanished)."""
        return tuple((status, n) for status, n in self.statuses if status not in INTENDED)

    @property
    def error_count(self) -> int:
        return sum(n for _, n in self.errors)


def median_or_none(values: Iterable[float | None]) -> float | None:
    """The median of the values that are there (a round without a figure does not vote)."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def least_squares_slope(points: Sequence[tuple[float, float]]) -> float | None:
    """The slope of the least-squares line through ``(x, y)`` points; None for fewer than two
    distinct x."""
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def slope_standard_error(points: Sequence[tuple[float, float]]) -> float | None:
    """The standard error of the least-squares slope (how far the noise of the readings alone
    could move it); None for fewer than three points."""
    slope = least_squares_slope(points)
    if slope is None or len(points) < 3:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    residuals = sum((y - mean_y - slope * (x - mean_x)) ** 2 for x, y in points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return math.sqrt(residuals / (len(points) - 2) / spread)


def _after_warmup(samples: Sequence[tuple[int, float]], warmup: int) -> list[tuple[float, float]]:
    return [(float(done), mib) for done, mib in samples if done >= warmup]


def rss_slope_per_1000(samples: Sequence[tuple[int, float]], warmup: int) -> float | None:
    """MiB per 1,000 requests: the slope through ``(requests done, resident MiB)`` samples taken
    at or after ``warmup`` requests (the first requests fill caches and arenas: not a leak)."""
    slope = least_squares_slope(_after_warmup(samples, warmup))
    return None if slope is None else 1000.0 * slope


def rss_slope_error_per_1000(samples: Sequence[tuple[int, float]], warmup: int) -> float | None:
    """The standard error of ``rss_slope_per_1000``, in the same unit."""
    error = slope_standard_error(_after_warmup(samples, warmup))
    return None if error is None else 1000.0 * error
