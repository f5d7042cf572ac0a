"""``voxflow bench``'s memory and HTTP sections: the server's resident memory around requests
(read from its ``/metrics``: ``process_resident_memory_bytes``), and the wall time of a long
whole-text HTTP request against the length of its audio.

* *after one request*: the warm baseline, then for each probe (an ordinary reply, 250 digits, a
  10,000-character text through ``POST /v1/audio/speech``) the resident size once the request has
  finished and the server has been idle for a second, as a difference from the baseline;
* *busy*: ``busy_streams`` WebSocket contexts speaking at once, the resident size sampled every
  100 ms: its peak, and the peak's excess over the baseline per stream;
* *stopped reader*: as many contexts, at 48 kHz (the most bytes a second of audio the native
  protocol sends), on a connection whose client reads nothing (``stopped_reader_s``): the
  peak, and the size held once the server has stopped rendering for it (the median of the
  last second), until the client goes;
* *HTTP*: wall time of the 10,000-character request over the duration of its audio.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import time
import urllib.request
from dataclasses import dataclass

from websockets.asyncio.client import connect

from voxflow import VoxflowClient, speak
from voxflow_bench.options import BenchOptions
from voxflow_bench.server_voices import http_base

__all__ = ["HttpResult", "MemoryResult", "run_memory_section"]

_RSS = re.compile(r"^process_resident_memory_bytes (\S+)$", re.MULTILINE)
_MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class MemoryResult:
    baseline_mib: float
    after_mib: tuple[tuple[str, float], ...]  # probe name, resident size after it
    busy_streams: int
    busy_peak_mib: float
    after_busy_mib: float
    stopped_peak_mib: float  # the same streams, their client reading nothing
    stopped_held_mib: float  # ... once the server stopped rendering for it
    after_stopped_mib: float

    @property
    def per_stream_mib(self) -> float:
        return max(0.0, self.busy_peak_mib - self.baseline_mib) / max(1, self.busy_streams)

    def as_dict(self) -> dict[str, object]:
        return {
            "baseline_mib": round(self.baseline_mib, 1),
            "after_mib": {name: round(value, 1) for name, value in self.after_mib},
            "busy_streams": self.busy_streams,
            "busy_peak_mib": round(self.busy_peak_mib, 1),
            "per_stream_mib": round(self.per_stream_mib, 1),
            "after_busy_mib": round(self.after_busy_mib, 1),
            "stopped_peak_mib": round(self.stopped_peak_mib, 1),
            "stopped_held_mib": round(self.stopped_held_mib, 1),
            "after_stopped_mib": round(self.after_stopped_mib, 1),
        }


@dataclass(frozen=True)
class HttpResult:
    chars: int
    wall_s: float
    audio_s: float
    first_byte_s: float

    @property
    def ratio(self) -> float:
        return self.wall_s / self.audio_s if self.audio_s else float("inf")

    def as_dict(self) -> dict[str, object]:
        return {
            "chars": self.chars,
            "wall_s": round(self.wall_s, 2),
            "audio_s": round(self.audio_s, 2),
            "first_byte_s": round(self.first_byte_s, 3),
            "wall_over_audio": round(self.ratio, 4),
        }


def _rss_mib(base: str) -> float:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = _RSS.search(text)
    if found is None:
        raise ValueError(f"{base}/metrics has no process_resident_memory_bytes")
    return float(found.group(1)) / _MIB


def _speech(base: str, text: str) -> HttpResult:
    """One OpenAI-style request for 24 kHz PCM, read to its end (blocking)."""
    body = json.dumps({"model": "tts-1", "voice": "alloy", "input": text, "response_format": "pcm"})
    request = urllib.request.Request(
        f"{base}/v1/audio/speech",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    started = time.monotonic()
    first: float | None = None
    size = 0
    with urllib.request.urlopen(request, timeout=1200) as response:
        while chunk := response.read(65536):
            if first is None:
                first = time.monotonic()
            size += len(chunk)
    wall = time.monotonic() - started
    return HttpResult(len(text), wall, size / 2 / 24000, (first or started) - started)


async def _settled_rss(base: str, options: BenchOptions) -> float:
    await asyncio.sleep(options.memory_settle_s)
    samples = []
    for _ in range(3):
        samples.append(await asyncio.to_thread(_rss_mib, base))
        await asyncio.sleep(options.memory_sample_gap_s)
    return statistics.median(samples)


def long_text(options: BenchOptions) -> str:
    """Corpus replies one after the other, up to ``options.long_text_chars`` characters (at a
    word)."""
    chars = options.long_text_chars
    text = ""
    while len(text) < chars:
        for reply in options.replies:
            text += reply.text + " "
    cut = text[: chars + 1]
    return cut.rsplit(" ", 1)[0] if " " in cut.strip() else cut.strip()


async def run_memory_section(url: str, options: BenchOptions) -> tuple[MemoryResult, HttpResult]:
    """The memory and HTTP figures of the server at ``url`` (see the module docstring)."""
    base = http_base(url)
    ordinary = max((r.text for r in options.replies if len(r.text) <= 250), key=len)
    probes = (("ordinary reply", ordinary), ("250 digits", "9" * 250))
    await asyncio.to_thread(_speech, base, ordinary)  # warm
    baseline = await _settled_rss(base, options)
    after: list[tuple[str, float]] = []
    for name, text in probes:
        await asyncio.to_thread(_speech, base, text)
        after.append((name, await _settled_rss(base, options)))
    http = await asyncio.to_thread(_speech, base, long_text(options))
    after.append((f"{http.chars:,}-character text", await _settled_rss(base, options)))
    streams = options.busy_streams
    peak, after_busy = await _busy(url, base, options, streams)
    stopped_peak, held, after_stopped = await _stopped_reader(url, base, options, streams)
    result = MemoryResult(
        baseline, tuple(after), streams, peak, after_busy, stopped_peak, held, after_stopped
    )
    return result, http


class _Sampler:
    """The server's resident size every 100 ms while it runs (``async with``)."""

    def __init__(self, base: str) -> None:
        self._base = base
        self.samples: list[tuple[float, float]] = []  # (time, MiB)
        self._done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Sampler:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._done.set()
        assert self._task is not None
        await self._task

    @property
    def peak(self) -> float:
        return max((mib for _, mib in self.samples), default=0.0)

    def median_since(self, since: float) -> float:
        return statistics.median(mib for at, mib in self.samples if at >= since)

    async def _run(self) -> None:
        while not self._done.is_set():
            mib = await asyncio.to_thread(_rss_mib, self._base)
            self.samples.append((time.monotonic(), mib))
            await asyncio.sleep(0.1)


async def _busy(url: str, base: str, options: BenchOptions, streams: int) -> tuple[float, float]:
    """Peak resident size while ``streams`` contexts speak at once, and the size after."""
    async with (
        _Sampler(base) as sampler,
        VoxflowClient.connect(url) as client,
        asyncio.TaskGroup() as group,
    ):
        for i in range(streams):
            group.create_task(
                speak(client, f"memory-{i}", options.cancel_text, output_format="pcm_24000")
            )
    return sampler.peak, await _settled_rss(base, options)


async def _stopped_reader(
    url: str, base: str, options: BenchOptions, streams: int
) -> tuple[float, float, float]:
    """The busy streams again, on a connection whose client reads nothing: the peak resident
    size, the size held over the last second of ``stopped_reader_s``, and the size after."""
    # max_queue 1: the client's library stops reading the socket after one message, so the
    # server's writes fill the kernel's buffers and then wait, as for a client that hung.
    async with (
        _Sampler(base) as sampler,
        connect(url, max_queue=1, max_size=None, ping_interval=None) as ws,
    ):
        for i in range(streams):
            cid = f"stopped-{i}"
            for message in (
                {"type": "start", "context_id": cid, "output_format": "pcm_48000"},
                {"type": "text", "context_id": cid, "text": options.cancel_text},
                {"type": "end", "context_id": cid},
            ):
                await ws.send(json.dumps(message))
        await asyncio.sleep(options.stopped_reader_s)
        held = sampler.median_since(time.monotonic() - 1.0)
        # Gone without reading: the close handshake cannot get through the full buffers.
        ws.transport.abort()
    return sampler.peak, held, await _settled_rss(base, options)
