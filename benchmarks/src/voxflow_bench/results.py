"""What ``voxflow bench`` measures: one record per reply spoken, gathered into sections.

The records are the same for voxflow and for a Wyoming peer (fields the peer cannot report are
None), so a section of one can be set against the same section of the other.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from voxflow import ChunkingConfig, SegmentEnd, Strategy, TextLanguage, segment_text
from voxflow_bench.stats import Distribution

__all__ = [
    "CancelResult",
    "Capacity",
    "Level",
    "Run",
    "Section",
    "Worst",
    "first_sentence_chars",
]


def first_sentence_chars(text: str, language: TextLanguage = TextLanguage.ENGLISH) -> int:
    """Characters up to the end of the text's first sentence (the whole text if it has none), as
    the server's sentence strategy finds it in ``language``."""
    for segment in segment_text(text, ChunkingConfig(strategy=Strategy.SENTENCE), language):
        if segment.boundary is SegmentEnd.SENTENCE:
            return segment.end
    return len(text)


@dataclass(frozen=True)
class Run:
    """One reply spoken once, as the client saw it. Times in ms on the client's clock."""

    reply: str  # the corpus name
    first_sentence_chars: int
    ok: bool  # finished with no error and no timeout
    ttfa_ms: float | None  # first audio arrival - first text sent
    ready_ms: float | None  # first audio - send of the token that made the first segment certain
    server_ttfa_ms: float | None  # the server's own figure (voxflow only)
    underruns: int
    underrun_ms: float
    deadline_misses: int | None  # voxflow only
    audio_ms: float

    def as_dict(self) -> dict[str, object]:
        return {
            "reply": self.reply,
            "first_sentence_chars": self.first_sentence_chars,
            "ok": self.ok,
            "ttfa_ms": _round(self.ttfa_ms),
            "ready_ms": _round(self.ready_ms),
            "server_ttfa_ms": _round(self.server_ttfa_ms),
            "underruns": self.underruns,
            "underrun_ms": round(self.underrun_ms, 1),
            "deadline_misses": self.deadline_misses,
            "audio_ms": round(self.audio_ms, 1),
        }


@dataclass(frozen=True)
class Worst:
    """A reply among the slowest of a section: its median TTFA over its runs."""

    reply: str
    ttfa_ms: float
    first_sentence_chars: int


@dataclass(frozen=True)
class Section:
    """The runs of one measurement and what they add up to."""

    name: str
    runs: tuple[Run, ...]

    @property
    def good(self) -> list[Run]:
        return [r for r in self.runs if r.ok]

    @property
    def errors(self) -> int:
        return len(self.runs) - len(self.good)

    @property
    def ttfa_ms(self) -> Distribution:
        return Distribution.of(r.ttfa_ms for r in self.good if r.ttfa_ms is not None)

    @property
    def ready_ms(self) -> Distribution:
        return Distribution.of(r.ready_ms for r in self.good if r.ready_ms is not None)

    @property
    def server_ttfa_ms(self) -> Distribution:
        return Distribution.of(r.server_ttfa_ms for r in self.good if r.server_ttfa_ms is not None)

    @property
    def underruns(self) -> int:
        return sum(r.underruns for r in self.good)

    @property
    def underrun_ms(self) -> float:
        return sum(r.underrun_ms for r in self.good)

    @property
    def max_misses(self) -> int | None:
        misses = [r.deadline_misses for r in self.good if r.deadline_misses is not None]
        return max(misses, default=None)

    def per_reply_ttfa(self) -> dict[str, float]:
        """Median TTFA of each reply over its runs."""
        by_reply: dict[str, list[float]] = defaultdict(list)
        for run in self.good:
            if run.ttfa_ms is not None:
                by_reply[run.reply].append(run.ttfa_ms)
        return {name: statistics.median(values) for name, values in by_reply.items()}

    def worst(self, count: int = 5) -> list[Worst]:
        chars = {r.reply: r.first_sentence_chars for r in self.runs}
        ranked = sorted(self.per_reply_ttfa().items(), key=lambda item: -item[1])
        return [Worst(name, ttfa, chars[name]) for name, ttfa in ranked[:count]]

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "runs": len(self.runs),
            "errors": self.errors,
            "ttfa_ms": self.ttfa_ms.as_dict(),
            "ready_ms": self.ready_ms.as_dict(),
            "server_ttfa_ms": self.server_ttfa_ms.as_dict(),
            "underruns": self.underruns,
            "underrun_ms": round(self.underrun_ms, 1),
            "max_deadline_misses": self.max_misses,
            "worst": [
                {
                    "reply": w.reply,
                    "ttfa_ms": round(w.ttfa_ms, 1),
                    "first_sentence_chars": w.first_sentence_chars,
                }
                for w in self.worst()
            ],
            "per_run": [r.as_dict() for r in self.runs],
        }


@dataclass(frozen=True)
class Level:
    """One concurrency level: ``connections`` clients starting a reply at the same moment."""

    connections: int
    section: Section

    @property
    def clean(self) -> bool:
        """No underrun and no error at this level."""
        return self.section.underruns == 0 and self.section.errors == 0

    def as_dict(self) -> dict[str, object]:
        return {"connections": self.connections, **self.section.as_dict()}


@dataclass(frozen=True)
class Capacity:
    """The concurrency sweep: levels upward until one is not clean."""

    levels: tuple[Level, ...]

    @property
    def largest_clean(self) -> int | None:
        clean = [level.connections for level in self.levels if level.clean]
        return max(clean, default=None)

    @property
    def first_failing(self) -> Level | None:
        return next((level for level in self.levels if not level.clean), None)

    def as_dict(self) -> dict[str, object]:
        failing = self.first_failing
        return {
            "largest_clean": self.largest_clean,
            "first_failing": None if failing is None else failing.connections,
            "levels": [level.as_dict() for level in self.levels],
        }


@dataclass(frozen=True)
class CancelResult:
    runs: int
    errors: int
    missed: int  # runs whose `done` came before the cancel could take effect
    played_ms: Distribution  # what the client reported as played when it barged in
    client_latency_ms: Distribution  # cancelled arrival - cancel send
    server_latency_ms: Distribution  # cancelled.latency_ms
    audio_in_flight: int  # audio frames that arrived between cancel send and `cancelled`
    audio_after_cancelled: int  # must be 0: audio frames that arrived after `cancelled`

    def as_dict(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "errors": self.errors,
            "missed": self.missed,
            "played_ms": self.played_ms.as_dict(),
            "client_latency_ms": self.client_latency_ms.as_dict(),
            "server_latency_ms": self.server_latency_ms.as_dict(),
            "audio_in_flight": self.audio_in_flight,
            "audio_after_cancelled": self.audio_after_cancelled,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
