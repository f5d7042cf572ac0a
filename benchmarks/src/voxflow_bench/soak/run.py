"""``voxflow soak``: the reliability figures of a running server (issue 11), section by section:
load (``load.py``), capacity (``load.py``), faults (``faults.py``) and the soak itself (here).
It starts nothing: ``make soak`` starts the servers and points it at them.

*Soak*: ``soak_requests`` short requests of every protocol and kind (OpenAI HTTP in each format
and as SSE, ElevenLabs HTTP and WebSocket, native contexts, some cancelled and some whose client
vanishes), ``soak_concurrency`` at once (default: the admission cap), in blocks of
``soak_block``; after each block, once the server is idle, its resident size, descriptors and
threads are read. The resident size's slope over requests after the warm-up is the leak
figure; every outcome that is not ok, a refusal, a cancel or a vanished client is an error,
counted by kind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import resource
import statistics
import time
from collections.abc import Awaitable, Callable

from voxflow import VoxflowClient
from voxflow_bench.faults import run_faults
from voxflow_bench.load import run_capacity, run_load, stream_limit, unloaded
from voxflow_bench.soak.clients import (
    Outcome,
    elevenlabs_http,
    elevenlabs_ws,
    guarded,
    native_reply,
    native_vanish,
    openai_speech,
)
from voxflow_bench.soak.options import SoakOptions, short_texts
from voxflow_bench.soak.report import SoakReport, SoakResult, SoakSample
from voxflow_bench.soak.stats import Outcomes
from voxflow_bench.soak.wire import Endpoint, server_stats, wait_idle, wait_ready

__all__ = ["SOAK_MIX", "raise_fd_limit", "run_soak", "run_soak_sync"]

log = logging.getLogger(__name__)

# One cycle of the soak's request kinds (request i is SOAK_MIX[i % len]): 7 native (2 cancelled,
# 1 vanishing), 8 OpenAI (every format, SSE, 1 vanishing), 5 ElevenLabs (HTTP, lines, WebSocket).
SOAK_MIX = (
    "native",
    "openai-pcm",
    "native",
    "elevenlabs-ws",
    "openai-sse",
    "native-cancel",
    "elevenlabs-http",
    "openai-mp3",
    "native",
    "openai-opus",
    "elevenlabs-ws",
    "native-vanish",
    "openai-wav",
    "elevenlabs-timestamps",
    "native",
    "openai-aac",
    "openai-flac",
    "native-cancel",
    "elevenlabs-http-mp3",
    "openai-vanish",
)
_SAMPLES_PER_READING = 3


def _soak_request(kind: str, endpoint: Endpoint, text: str, index: int) -> Awaitable[Outcome]:
    if kind.startswith("openai-"):
        variant = kind.removeprefix("openai-")
        if variant in ("sse", "vanish"):
            return openai_speech(endpoint, text, sse=variant == "sse", vanish=variant == "vanish")
        return openai_speech(endpoint, text, response_format=variant)
    if kind == "elevenlabs-http":
        return elevenlabs_http(endpoint, text)
    if kind == "elevenlabs-http-mp3":
        return elevenlabs_http(endpoint, text, output_format="mp3_44100_128")
    if kind == "elevenlabs-timestamps":
        return elevenlabs_http(endpoint, text, timestamps=True)
    if kind == "elevenlabs-ws":
        return elevenlabs_ws(endpoint, text)
    if kind == "native-vanish":
        return native_vanish(endpoint, text)
    return _native_once(endpoint, text, index, cancel=kind == "native-cancel")


async def _native_once(endpoint: Endpoint, text: str, index: int, cancel: bool) -> Outcome:
    """A connection of its own (connections come and go too), one context on it."""
    async with VoxflowClient.connect(f"{endpoint.ws}/v1/stream") as client:
        return await native_reply(
            client, f"soak-{index}", text, cancel_after_ms=1.0 if cancel else None
        )


async def _reading(endpoint: Endpoint, done: int, pid: int | None) -> SoakSample:
    """The server's figures once it is idle: the median of a few readings of the resident size."""
    stats = []
    for _ in range(_SAMPLES_PER_READING):
        stats.append(await server_stats(endpoint, pid))
        await asyncio.sleep(0.2)
    last = stats[-1]
    rss = statistics.median(s.rss_mib for s in stats)
    return SoakSample(done, rss, last.open_fds, last.threads, last.tasks)


async def run_soak_section(endpoint: Endpoint, options: SoakOptions) -> SoakResult:
    texts = short_texts(options.replies, options.soak_text_chars)
    concurrency = options.soak_concurrency or await stream_limit(endpoint)
    total = options.soak_requests
    outcomes: list[tuple[str, Outcome]] = []
    samples = [await _reading(endpoint, 0, options.pid)]
    started = time.monotonic()
    for block_start in range(0, total, options.soak_block):
        block_end = min(total, block_start + options.soak_block)
        next_index = block_start

        async def worker(end: int) -> None:
            nonlocal next_index
            while next_index < end:
                index = next_index
                next_index += 1
                kind = SOAK_MIX[index % len(SOAK_MIX)]
                request = _soak_request(kind, endpoint, texts[index % len(texts)], index)
                outcomes.append((kind, await guarded(kind, request, options.run_timeout_s)))

        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker(block_end))
        await wait_idle(endpoint, options.settle_s)
        samples.append(await _reading(endpoint, block_end, options.pid))
        errors = Outcomes.of(o for _, o in outcomes).error_count
        log.info(
            "soak: %d/%d requests, RSS %.1f MiB, %d errors",
            block_end,
            total,
            samples[-1].rss_mib,
            errors,
        )
    kinds = sorted({kind for kind, _ in outcomes})
    return SoakResult(
        requests=total,
        concurrency=concurrency,
        wall_s=time.monotonic() - started,
        warmup=options.soak_warmup,
        samples=tuple(samples),
        outcomes=Outcomes.of(o for _, o in outcomes),
        by_kind=tuple((k, Outcomes.of(o for kind, o in outcomes if kind == k)) for k in kinds),
    )


def raise_fd_limit(needed: int) -> tuple[int, int]:
    """Raise this process's soft open-file limit towards ``needed`` (at most the hard limit): the
    faults hold a thousand sockets. Returns the (soft, hard) limits now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft, hard


def _machine(started_load: float, fd_soft: int) -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    now = os.getloadavg()[0]
    return (
        f"{cpus} CPUs, load average (1 min) {started_load:.2f} at start, {now:.2f} at the end; "
        f"client open-file limit {fd_soft}"
    )


async def run_soak(
    url: str, options: SoakOptions, capacity_url: str | None = None, wait_ready_s: float = 0.0
) -> SoakReport:
    """Run the selected sections against the server at ``url`` (capacity against
    ``capacity_url`` when given: a server that admits every level)."""
    o = options
    endpoint = Endpoint.from_url(url)
    cap_endpoint = Endpoint.from_url(capacity_url) if capacity_url else endpoint
    sockets = o.idle_sockets + o.trickle_sockets + o.vanish_batch if o.runs("faults") else 0
    fd_soft, fd_hard = raise_fd_limit(sockets + 4 * max(o.soak_concurrency, 64) + 256)
    log.info("client open-file limit: soft %d, hard %d", fd_soft, fd_hard)
    if wait_ready_s > 0:
        await wait_ready(endpoint, wait_ready_s)
        if cap_endpoint != endpoint and o.runs("capacity"):
            await wait_ready(cap_endpoint, wait_ready_s)
    started, started_load = time.monotonic(), os.getloadavg()[0]
    report = SoakReport(url, "", 0.0)
    base = None
    if o.runs("load"):
        base = await unloaded(endpoint, o)
        report = SoakReport(url, "", 0.0, load=await run_load(endpoint, o, base))

    async def capacity() -> SoakReport:
        cap_base = base if base is not None and cap_endpoint == endpoint else None
        cap_base = cap_base or await unloaded(cap_endpoint, o)
        return _with(report, capacity=await run_capacity(cap_endpoint, o, cap_base))

    async def faults() -> SoakReport:
        return _with(report, faults=await run_faults(endpoint, o))

    async def soak() -> SoakReport:
        return _with(report, soak=await run_soak_section(endpoint, o))

    sections: list[tuple[str, Callable[[], Awaitable[SoakReport]]]] = [
        ("capacity", capacity),
        ("faults", faults),
        ("soak", soak),
    ]
    for name, section in sections:
        if o.runs(name):
            report = await section()
    machine = _machine(started_load, fd_soft)
    return _with(report, machine=machine, wall_s=time.monotonic() - started)


def _with(report: SoakReport, **changes: object) -> SoakReport:
    return dataclasses.replace(report, **changes)  # type: ignore[arg-type]


def run_soak_sync(
    url: str, options: SoakOptions, capacity_url: str | None = None, wait_ready_s: float = 0.0
) -> SoakReport:
    """``run_soak`` on a fresh event loop, for the CLI."""
    return asyncio.run(run_soak(url, options, capacity_url, wait_ready_s))
