"""Where a voxflow server's CPU goes over a level: its ``/metrics`` counters before and after.

The server splits its process's CPU time into parts (``voxflow_cpu_seconds_total{part}``, which
add up to it), says what share of its windows' CPU their decoder context took
(``voxflow_window_context_cpu_seconds_total``) and how much audio its windows rendered
(``voxflow_rendered_audio_seconds_total``). A level's ``CpuBreakdown`` is the difference of two
scrapes. Servers without these metrics (the Wyoming peer, an older voxflow) have none.

One scrape answers for one process: with several processes on one port (``SO_REUSEPORT``) the
two scrapes may reach different ones, so the calls benchmark takes no breakdown there, and none
when the process restarted between the scrapes (``process_start_time_seconds`` differs). A part
summed over live threads (the encoders') loses an exited thread's time to ``other``: a part's
difference may then be slightly negative; their sum is the process's CPU time all the same.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

__all__ = ["PARTS", "CpuBreakdown", "CpuCounters", "metrics_url", "parse_counters", "scrape"]

log = logging.getLogger(__name__)

# The server's parts, in the order the report shows them (voxflow.server.cpu_parts).
PARTS = (
    "text_stage",
    "lead_text_stage",
    "windows",
    "lead_windows",
    "scheduling",
    "encode",
    "event_loop",
    "other",
)
# The parts the engine's jobs take (the rest is the server around them).
ENGINE_PARTS = ("text_stage", "lead_text_stage", "windows", "lead_windows")

_CPU = "voxflow_cpu_seconds_total"
_CONTEXT = "voxflow_window_context_cpu_seconds_total"
_RENDERED = "voxflow_rendered_audio_seconds_total"
_STARTED = "process_start_time_seconds"
# A sample line of the text exposition format: name, optional labels, value (and an optional
# timestamp, which prometheus_client does not write).
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)")
_PART_LABEL = re.compile(r'(?:^|,)\s*part="([^"]*)"')
_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class CpuCounters:
    """One scrape's counters (totals since the server started)."""

    parts: Mapping[str, float]
    context_s: float
    rendered_audio_s: float
    started_at: float | None  # process_start_time_seconds: which process answered


def parse_counters(text: str) -> CpuCounters | None:
    """The CPU counters of a ``/metrics`` body (None when it has no ``voxflow_cpu_seconds``)."""
    parts: dict[str, float] = {}
    single: dict[str, float] = {}
    for line in text.splitlines():
        found = _SAMPLE.match(line)
        if found is None:
            continue
        name, labels, raw = found.groups()
        try:
            value = float(raw)
        except ValueError:
            continue
        if name == _CPU:
            part = _PART_LABEL.search(labels or "")
            if part is not None:
                parts[part.group(1)] = value
        elif name in (_CONTEXT, _RENDERED, _STARTED) and not labels:
            single[name] = value
    if not parts:
        return None
    return CpuCounters(
        parts,
        single.get(_CONTEXT, 0.0),
        single.get(_RENDERED, 0.0),
        single.get(_STARTED),
    )


@dataclass(frozen=True)
class CpuBreakdown:
    """A server's CPU seconds by part over a level, and the audio its windows rendered."""

    parts: Mapping[str, float]
    context_s: float  # of the windows' (both kinds), what their decoder context took
    rendered_audio_s: float

    @classmethod
    def between(cls, before: CpuCounters, after: CpuCounters) -> CpuBreakdown | None:
        """What ``after`` added to ``before`` (None: another process answered, or it
        restarted)."""
        if before.started_at != after.started_at:
            return None
        names = [*PARTS, *(p for p in after.parts if p not in PARTS)]
        return cls(
            {p: after.parts.get(p, 0.0) - before.parts.get(p, 0.0) for p in names},
            after.context_s - before.context_s,
            after.rendered_audio_s - before.rendered_audio_s,
        )

    @property
    def total_s(self) -> float:
        """The process's CPU time over the level (the parts add up to it)."""
        return math.fsum(self.parts.values())

    @property
    def engine_s(self) -> float:
        """The engine's jobs: text stages and windows, leads' included."""
        return math.fsum(self.parts.get(p, 0.0) for p in ENGINE_PARTS)

    def per(self, audio_s: float) -> dict[str, float] | None:
        """Every part, ``context`` and ``total`` per second of ``audio_s`` (None: no audio)."""
        if audio_s <= 0:
            return None
        figures = {p: s / audio_s for p, s in self.parts.items()}
        figures["context"] = self.context_s / audio_s
        figures["total"] = self.total_s / audio_s
        return figures

    def as_dict(self, heard_s: float) -> dict[str, object]:
        per_heard = self.per(heard_s)
        return {
            "parts_s": {p: round(s, 3) for p, s in self.parts.items()},
            "total_s": round(self.total_s, 3),
            "context_s": round(self.context_s, 3),
            "rendered_audio_s": round(self.rendered_audio_s, 2),
            "per_heard_s": None
            if per_heard is None
            else {p: round(v, 5) for p, v in per_heard.items()},
        }


def metrics_url(url: str) -> str:
    """``/metrics`` of the server at ``url`` (http:// or ws://, any path)."""
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "/metrics", "", ""))


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:
        body: bytes = response.read()
    return body.decode("utf-8", "replace")


async def scrape(url: str) -> CpuCounters | None:
    """The CPU counters ``url`` (a ``/metrics`` URL) serves now, fetched on a thread (None when
    it cannot be read or has none)."""
    try:
        text = await asyncio.to_thread(_get, url)
    except (OSError, ValueError) as error:  # URLError and HTTPError are OSErrors
        log.debug("no CPU breakdown from %s: %s", url, error)
        return None
    return parse_counters(text)
