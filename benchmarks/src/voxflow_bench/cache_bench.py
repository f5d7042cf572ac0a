"""``voxflow bench-cache``: what the phrase cache does for the time to first audio.

Against a running server (native WebSocket protocol, client-side clock, as ``voxflow bench``):

* *hits*: the phrases an agent says again and again (the trace's repeated replies) are
  prefetched (``POST /v1/cache/prefetch``), then each is spoken ``repeats`` times: each a memory
  hit. The same phrases with a seed of their own are misses of the same text, for comparison;
* *shared hits* (with ``--replica``, a second server on the same Redis): a phrase prefetched on
  the first server is spoken on the replica, whose memory does not have it: a Redis hit;
* *replay*: the trace (``corpus/agent_trace.tsv``, or ``--trace``) replayed turn by turn as
  an agent sends it (whole replies, no seed): which turns started from the cache, and the time to
  first audio of all turns. Run it against a server with and one without a cache to compare.

Whether a context's first segment came from the cache is the server's word (``done.metrics``'s
``cached``); a measured hit that the server did not report as one is counted as a miss.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from voxflow import ContextResult, VoxflowClient, speak, stream_url
from voxflow_bench.corpus import load_corpus
from voxflow_bench.stats import Distribution

__all__ = ["CacheBenchOptions", "CacheReport", "run_cache_bench"]

TRACE = Path(__file__).parent / "corpus" / "agent_trace.tsv"


@dataclass(frozen=True)
class CacheBenchOptions:
    url: str = "http://127.0.0.1:8000"
    replica_url: str | None = None
    trace: Path | None = None
    repeats: int = 5
    sections: tuple[str, ...] = ("hits", "replay")


@dataclass
class CacheReport:
    hit_ttfa: Distribution | None = None
    miss_ttfa: Distribution | None = None
    shared_ttfa: Distribution | None = None
    replay_ttfa: Distribution | None = None
    replay_hit_ttfa: Distribution | None = None
    replay_miss_ttfa: Distribution | None = None
    replay_turns: int = 0
    replay_hits: int = 0
    unreported_hits: int = 0  # a phrase expected from the cache that the server rendered
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        def d(value: Distribution | None) -> object:
            return None if value is None else value.as_dict()

        return {
            "hit_ttfa_ms": d(self.hit_ttfa),
            "miss_ttfa_ms": d(self.miss_ttfa),
            "shared_hit_ttfa_ms": d(self.shared_ttfa),
            "replay": {
                "turns": self.replay_turns,
                "first_segment_hits": self.replay_hits,
                "ttfa_ms": d(self.replay_ttfa),
                "hit_ttfa_ms": d(self.replay_hit_ttfa),
                "miss_ttfa_ms": d(self.replay_miss_ttfa),
            },
            "unreported_hits": self.unreported_hits,
            "notes": self.notes,
        }

    def render(self) -> str:
        def row(name: str, value: Distribution | None) -> str | None:
            if value is None or not value.count:
                return None
            return (
                f"{name:<34} n={value.count:<4} p50 {value.p50:7.1f} ms   p95 {value.p95:7.1f} ms"
                f"   max {value.max:7.1f} ms"
            )

        lines = [
            row("TTFA, memory hit", self.hit_ttfa),
            row("TTFA, miss (same text, own seed)", self.miss_ttfa),
            row("TTFA, Redis hit (replica)", self.shared_ttfa),
        ]
        if self.replay_turns:
            rate = self.replay_hits / self.replay_turns
            lines.append(
                f"replay: {self.replay_turns} turns, {self.replay_hits} started from the cache "
                f"({100 * rate:.0f}%)"
            )
            lines += [
                row("TTFA, replay, all turns", self.replay_ttfa),
                row("TTFA, replay, cache hits", self.replay_hit_ttfa),
                row("TTFA, replay, misses", self.replay_miss_ttfa),
            ]
        if self.unreported_hits:
            lines.append(f"{self.unreported_hits} expected hits were rendered (see notes)")
        lines += self.notes
        return "\n".join(line for line in lines if line is not None)


def repeated_replies(texts: Sequence[str]) -> list[str]:
    """The replies said more than once, most frequent first: what is worth prefetching."""
    counts = Counter(texts)
    return [text for text, n in counts.most_common() if n > 1]


async def run_cache_bench(
    options: CacheBenchOptions, progress: Callable[[str], None] | None = None
) -> CacheReport:
    report = CacheReport()
    trace = [reply.text for reply in load_corpus(options.trace or TRACE)]
    phrases = repeated_replies(trace) or trace[:5]
    say = progress or (lambda _: None)
    seeds = itertools.count(1000)
    async with VoxflowClient.connect(stream_url(options.url)) as client:
        if "hits" in options.sections:
            say("hits")
            hits, misses = [], []
            for phrase in phrases:
                await _prefetch(options.url, phrase, None)
                for _ in range(options.repeats):
                    hit = await _speak(client, phrase, None)
                    hits.append(_ttfa(hit, True, report))
                    miss = await _speak(client, phrase, next(seeds))
                    misses.append(_ttfa(miss, False, report))
            report.hit_ttfa = Distribution.of(v for v in hits if v is not None)
            report.miss_ttfa = Distribution.of(v for v in misses if v is not None)
        if options.replica_url is not None and "hits" in options.sections:
            say("shared hits")
            report.shared_ttfa = await _shared_hits(options, phrases, seeds, report)
        if "replay" in options.sections:
            say("replay")
            await _replay(client, trace, report)
    return report


async def _shared_hits(
    options: CacheBenchOptions, phrases: list[str], seeds: itertools.count[int], report: CacheReport
) -> Distribution:
    assert options.replica_url is not None
    samples: list[float] = []
    async with VoxflowClient.connect(stream_url(options.replica_url)) as replica:
        for phrase in phrases:
            for _ in range(options.repeats):
                seed = next(seeds)  # a phrase the replica has never seen
                await _prefetch(options.url, phrase, seed)
                await asyncio.sleep(0.05)  # the first server writes to Redis off its workers
                value = _ttfa(await _speak(replica, phrase, seed), True, report)
                if value is not None:
                    samples.append(value)
    return Distribution.of(samples)


async def _replay(client: VoxflowClient, trace: list[str], report: CacheReport) -> None:
    every, hits, misses = [], [], []
    for text in trace:
        result = await _speak(client, text, None)
        ttfa = result.ttfa_ms
        metrics = result.metrics
        if ttfa is None or metrics is None:
            report.notes.append(f"replay: no audio for {text[:40]!r}")
            continue
        every.append(ttfa)
        report.replay_turns += 1
        if metrics.cached:
            report.replay_hits += 1
            hits.append(ttfa)
        else:
            misses.append(ttfa)
    report.replay_ttfa = Distribution.of(every)
    report.replay_hit_ttfa = Distribution.of(hits)
    report.replay_miss_ttfa = Distribution.of(misses)


_contexts = itertools.count(1)


async def _speak(client: VoxflowClient, text: str, seed: int | None) -> ContextResult:
    return await speak(client, f"cache-{next(_contexts)}", text, seed=seed)


def _ttfa(result: ContextResult, expect_hit: bool, report: CacheReport) -> float | None:
    metrics = result.metrics
    if metrics is None or result.ttfa_ms is None:
        report.notes.append(f"no audio: {[e.message for e in result.errors]}")
        return None
    if expect_hit and not metrics.cached:
        report.unreported_hits += 1
        return None
    return result.ttfa_ms


async def _prefetch(url: str, text: str, seed: int | None) -> None:
    body: dict[str, object] = {"text": text, "wait": True}
    if seed is not None:
        body["seed"] = seed
    request = urllib.request.Request(
        f"{url.rstrip('/')}/v1/cache/prefetch",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )

    def send() -> None:
        with urllib.request.urlopen(request, timeout=120) as response:
            if response.status != 200:
                raise RuntimeError(f"prefetch answered {response.status}")

    await asyncio.to_thread(send)
