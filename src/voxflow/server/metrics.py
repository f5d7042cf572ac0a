"""Prometheus metrics, one registry per app (no process-global registry)."""

from __future__ import annotations

import asyncio
import gc
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from voxflow.config import ServerSettings
from voxflow.runtime.cache.phrase_cache import CacheStats, Tier
from voxflow.runtime.cache.redis_tier import RedisTierStats
from voxflow.runtime.ledger import WorkLedger
from voxflow.runtime.scheduler_settings import SchedulerStats
from voxflow.runtime.slack import PRESSURE_BOUNDS, SlackStats
from voxflow.server.cpu_parts import CpuParts
from voxflow.session.load_limit import Decision

_LATENCY_BUCKETS = (0.005, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5)
# Up to Pipecat's 3 s (a TTS context quiet that long is ended), around the server's 1.5 s bound.
_QUIET_BUCKETS = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0)


class _SchedulerCollector(Collector):
    """Reads the scheduler's counters at scrape time rather than mirroring them."""

    def __init__(self, stats: Callable[[], SchedulerStats]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        stats = self._stats()
        yield GaugeMetricFamily(
            "voxflow_queue_depth", "Streams waiting for a worker", value=stats.ready_streams
        )
        yield GaugeMetricFamily("voxflow_workers", "Synthesis workers", value=stats.workers)
        yield GaugeMetricFamily(
            "voxflow_busy_workers", "Workers running a job", value=stats.busy_workers
        )
        yield CounterMetricFamily(
            "voxflow_jobs", "Synthesis jobs run (text stage and windows)", value=stats.jobs_run
        )
        yield CounterMetricFamily(
            "voxflow_deadline_misses",
            "Windows finished after their stream's playback deadline",
            value=stats.deadline_misses,
        )


class _CacheCollector(Collector):
    """The phrase cache's counters, read at scrape time (``voxflow.runtime.cache``)."""

    def __init__(
        self, stats: Callable[[], CacheStats], shared: Callable[[], RedisTierStats] | None
    ) -> None:
        self._stats = stats
        self._shared = shared

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        stats = self._stats()
        hits = CounterMetricFamily(
            "voxflow_cache_hits",
            "Phrase cache lookups that found the phrase, by tier",
            labels=["tier"],
        )
        for tier in Tier:
            hits.add_metric([tier.value], stats.hits[tier])
        yield hits
        yield CounterMetricFamily(
            "voxflow_cache_misses", "Phrase cache lookups that rendered", value=stats.misses
        )
        lookups = sum(stats.hits.values()) + stats.misses
        yield GaugeMetricFamily(
            "voxflow_cache_hit_ratio",
            "Phrase cache hits over lookups since start (0 before any lookup)",
            value=sum(stats.hits.values()) / lookups if lookups else 0.0,
        )
        yield CounterMetricFamily(
            "voxflow_cache_stored", "Phrases kept (admitted and rendered whole)", value=stats.stored
        )
        yield CounterMetricFamily(
            "voxflow_cache_evictions", "Phrases pushed out of memory", value=stats.evictions
        )
        yield GaugeMetricFamily(
            "voxflow_cache_bytes", "Bytes the memory tier holds", value=stats.bytes
        )
        yield GaugeMetricFamily("voxflow_cache_entries", "Phrases in memory", value=stats.entries)
        if self._shared is None:
            return
        shared = self._shared()
        yield GaugeMetricFamily(
            "voxflow_cache_shared_up",
            "1 while the shared tier (Redis) answers, 0 while it is left alone after a failure",
            value=1.0 if shared.available else 0.0,
        )
        yield CounterMetricFamily(
            "voxflow_cache_shared_errors",
            "Shared-tier calls that failed (down, slow, bad data): each a miss or a lost write",
            value=shared.errors,
        )
        yield CounterMetricFamily(
            "voxflow_cache_shared_writes", "Phrases written to the shared tier", value=shared.writes
        )
        yield CounterMetricFamily(
            "voxflow_cache_shared_dropped_writes",
            "Writes dropped: the shared tier was down or its queue full",
            value=shared.dropped_writes,
        )


class _SlackCollector(Collector):
    """The workers' slack against their listeners, which admission learns its capacity from
    (``voxflow.runtime.slack``, ``voxflow.session.load_limit``), read at scrape time."""

    def __init__(
        self, slack: Callable[[], SlackStats], last: Callable[[], Decision | None]
    ) -> None:
        self._slack = slack
        self._last = last

    def collect(
        self,
    ) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        stats = self._slack()
        buckets = []
        seen = 0
        for bound, count in zip((*PRESSURE_BOUNDS, math.inf), stats.buckets, strict=True):
            seen += count
            buckets.append(("+Inf" if math.isinf(bound) else f"{bound:g}", seen))
        yield HistogramMetricFamily(
            "voxflow_admission_pressure",
            "Each job's wait for a worker over its margin (0: served at once; 1: at its "
            "deadline; over 1: late); a stream's first audio counts as one",
            buckets=buckets,
            sum_value=stats.pressure_sum,
        )
        yield CounterMetricFamily(
            "voxflow_admission_misses",
            "Windows that came after their listener ran out or after the quiet bound, of jobs "
            "that had a margin when they were ready",
            value=stats.misses,
        )
        yield CounterMetricFamily(
            "voxflow_admission_text_late",
            "Jobs with no margin left when they were ready (their text came late)",
            value=stats.text_late,
        )
        yield GaugeMetricFamily(
            "voxflow_admission_overdue",
            "Jobs waiting for a worker past their deadline now",
            value=stats.overdue,
        )
        last = self._last()
        if last is not None:
            yield GaugeMetricFamily(
                "voxflow_admission_pressure_judged",
                "The recent jobs' 95th percentile of pressure that the learnt capacity was last "
                "moved or held by (capped at the histogram's last bound)",
                value=min(last.pressure, PRESSURE_BOUNDS[-1]),
            )


def _os_threads() -> float:
    """Every thread of the process (ONNX Runtime's and the encoders' included), which Python's
    own count misses; Python's count where /proc is not there."""
    try:
        return float(len(os.listdir("/proc/self/task")))
    except OSError:
        return float(threading.active_count())


def _loop_tasks() -> float:
    """The event loop's tasks (every connection has a few): rendered on the loop, as /metrics
    is; NaN where there is no running loop to count."""
    try:
        return float(len(asyncio.all_tasks()))
    except RuntimeError:
        return math.nan


class ServerMetrics:
    def __init__(self, max_quiet_s: float = ServerSettings.max_quiet_s) -> None:
        """``max_quiet_s``: a context quiet for longer while it owes audio is counted as a
        quiet gap (``ServerSettings.max_quiet_s``)."""
        self.registry = CollectorRegistry()
        self._max_quiet_s = max_quiet_s
        # process_resident_memory_bytes, open file descriptors, CPU seconds: what an operator
        # (and `voxflow bench`'s memory section) watches.
        ProcessCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.ttfa = Histogram(
            "voxflow_ttfa_seconds",
            "Time from a context's first text to its first audio",
            ["protocol"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.streams = Counter(
            "voxflow_streams",
            "Streams started, by protocol, output format and voice",
            ["protocol", "format", "voice"],
            registry=self.registry,
        )
        self.chunk_gap = Histogram(
            "voxflow_chunk_gap_seconds",
            "Time between consecutive audio chunks of a context",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.quiet = Histogram(
            "voxflow_quiet_seconds",
            "How long a context sent no audio before a chunk while it owed some: since its chunk "
            "before, or since its text made the chunk due (a first chunk: its wait)",
            buckets=_QUIET_BUCKETS,
            registry=self.registry,
        )
        self.quiet_gaps = Counter(
            "voxflow_quiet_gaps",
            "Chunks that came after a context owing audio had sent none for longer than the "
            "server's bound (max_quiet_s): a framework may have ended the context meanwhile",
            registry=self.registry,
        )
        self.cancel_latency = Histogram(
            "voxflow_cancel_latency_seconds",
            "Time from a cancel message to the cancelled event",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.active_contexts = Gauge(
            "voxflow_active_contexts", "Contexts with synthesis under way", registry=self.registry
        )
        self.admitted_streams = Gauge(
            "voxflow_admitted_streams",
            "Streams admitted and open (contexts, every protocol; slots under a count cap)",
            registry=self.registry,
        )
        self.stream_limit = Gauge(
            "voxflow_stream_limit",
            "How many Piper streams may speak at once (the count cap or the capacity)",
            registry=self.registry,
        )
        self.load = Gauge(
            "voxflow_load",
            "CPU seconds a second the speaking streams take, as admission counts them",
            registry=self.registry,
        )
        self.capacity = Gauge(
            "voxflow_capacity",
            "CPU seconds a second admission lets speaking streams take, as learnt from the "
            "workers' slack (0: no limit)",
            registry=self.registry,
        )
        # The standard process collector has no thread count; a thread leak shows here
        # (`voxflow soak` reads it before and after each fault).
        self.threads = Gauge(
            "voxflow_threads",
            "Threads of the server process: os (all of them), python (threading's count)",
            ["kind"],
            registry=self.registry,
        )
        self.threads.labels("os").set_function(_os_threads)
        self.threads.labels("python").set_function(lambda: float(threading.active_count()))
        # A connection whose handler never ended leaves its tasks here.
        self.loop_tasks = Gauge(
            "voxflow_event_loop_tasks",
            "Tasks on the server's event loop",
            registry=self.registry,
        )
        self.loop_tasks.set_function(_loop_tasks)
        self.gc_frozen = Gauge(
            "voxflow_gc_frozen_objects",
            "Objects kept out of the garbage collector's walks (what the server made at start-up)",
            registry=self.registry,
        )
        self.gc_frozen.set_function(lambda: float(gc.get_freeze_count()))
        self.cache_ttfa: Histogram | None = None  # with a phrase cache (``watch_cache``)
        self.rejected = Counter(
            "voxflow_rejected",
            "Requests and contexts refused before any work, by reason",
            ["reason"],
            registry=self.registry,
        )

    # The connection's reports (``voxflow.connection.stream_metrics.StreamMetrics``).

    def observe_stream_opened(self, protocol: str, output_format: str, voice: str) -> None:
        self.active_contexts.inc()
        self.streams.labels(protocol, output_format, voice).inc()

    def observe_stream_ended(self) -> None:
        self.active_contexts.dec()

    def observe_chunk_gap(self, gap_s: float) -> None:
        self.chunk_gap.observe(gap_s)

    def observe_quiet(self, quiet_s: float) -> None:
        self.quiet.observe(quiet_s)
        if quiet_s > self._max_quiet_s:
            self.quiet_gaps.inc()

    def observe_first_audio(self, protocol: str, ttfa_s: float, cached: bool | None) -> None:
        self.ttfa.labels(protocol).observe(ttfa_s)
        if self.cache_ttfa is not None and cached is not None:
            self.cache_ttfa.labels("hit" if cached else "miss").observe(ttfa_s)

    def observe_cancel(self, latency_s: float) -> None:
        self.cancel_latency.observe(latency_s)

    def count_rejected(self, reason: str) -> None:
        """One request or connection refused before any work (admission, limits, access)."""
        self.rejected.labels(reason).inc()

    def watch_scheduler(self, stats: Callable[[], SchedulerStats]) -> None:
        self.registry.register(_SchedulerCollector(stats))

    def watch_cpu(
        self,
        ledger: Callable[[], WorkLedger],
        synthesis_threads: Callable[[], Iterable[int]],
        encode_threads: Callable[[], Iterable[int]],
    ) -> None:
        """``voxflow_cpu_seconds_total{part}`` (``voxflow.server.cpu_parts``)."""
        self.registry.register(CpuParts(ledger, synthesis_threads, encode_threads))

    def watch_admission(
        self, slack: Callable[[], SlackStats], last: Callable[[], Decision | None]
    ) -> None:
        """``voxflow_admission_*``: the slack the learnt capacity is judged by."""
        self.registry.register(_SlackCollector(slack, last))

    def watch_cache(
        self, stats: Callable[[], CacheStats], shared: Callable[[], RedisTierStats] | None
    ) -> None:
        self.registry.register(_CacheCollector(stats, shared))
        self.cache_ttfa = Histogram(
            "voxflow_cache_ttfa_seconds",
            "Time from a context's first text to its first audio, by whether its first segment "
            "was a phrase cache hit",
            ["result"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
