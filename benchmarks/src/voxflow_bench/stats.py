"""Percentiles and distributions for the benchmarks' reports."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Distribution", "percentile", "ratio"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), interpolated linearly between order statistics."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, or None when either is missing or ``b`` is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


@dataclass(frozen=True)
class Distribution:
    count: int
    p50: float | None
    p95: float | None
    p99: float | None
    mean: float | None
    max: float | None

    @classmethod
    def of(cls, values: Iterable[float]) -> Distribution:
        data = list(values)
        if not data:
            return cls(0, None, None, None, None, None)
        return cls(
            count=len(data),
            p50=percentile(data, 50),
            p95=percentile(data, 95),
            p99=percentile(data, 99),
            mean=sum(data) / len(data),
            max=max(data),
        )

    def as_dict(self) -> dict[str, object]:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 3)

        return {
            "count": self.count,
            "p50": r(self.p50),
            "p95": r(self.p95),
            "p99": r(self.p99),
            "mean": r(self.mean),
            "max": r(self.max),
        }
