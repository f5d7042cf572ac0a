"""Percentiles and distributions for the benchmarks' reports."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Distribution", "PairedDifference", "percentile", "ratio"]


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


@dataclass(frozen=True)
class PairedDifference:
    """How much larger one count is than another over the same items (each reply's errors in
    two renderings), and whether chance explains it: the one-sided sign-flip permutation
    test. If the two are alike, each item's difference is as likely to have either sign;
    ``p`` is the share of all ``2**n`` sign assignments to the ``n`` non-zero differences
    whose total is at least the observed one. Exact: the totals are integers, so they are
    counted one item at a time."""

    total: int  # the sum of the differences
    larger: int  # items where the first count is larger
    smaller: int  # items where it is smaller
    p: float

    @classmethod
    def of(cls, first: Sequence[int], second: Sequence[int]) -> PairedDifference:
        if len(first) != len(second):
            raise ValueError("the two counts must cover the same items")
        diffs = [a - b for a, b in zip(first, second, strict=True)]
        total = sum(diffs)
        # How many sign assignments to the differences seen so far reach each total.
        reach: dict[int, int] = {0: 1}
        for size in (abs(d) for d in diffs if d):
            grown: dict[int, int] = {}
            for value, count in reach.items():
                for signed in (value + size, value - size):
                    grown[signed] = grown.get(signed, 0) + count
            reach = grown
        p = sum(count for value, count in reach.items() if value >= total) / sum(reach.values())
        return cls(total, sum(d > 0 for d in diffs), sum(d < 0 for d in diffs), p)

    def as_dict(self) -> dict[str, object]:
        return {
            "total": self.total,
            "larger": self.larger,
            "smaller": self.smaller,
            "p": round(self.p, 4),
        }
