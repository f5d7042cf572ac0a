"""``voxflow bench``: a running voxflow server (and, with a peer, a Wyoming TTS server) measured
the way a voice agent uses it, on a corpus of agent replies (``voxflow_bench.corpus``).

Sections are interleaved between voxflow and the peer (voxflow's full text, the peer's full text,
voxflow's tokens, ...), so that the drift of a shared machine hits both alike. See
``voxflow_bench.sections`` and ``voxflow_bench.peer`` for what each section measures.
"""

from __future__ import annotations

import asyncio
import time
from typing import TextIO

from voxflow import VoxflowClient, stream_url
from voxflow_bench.memory import run_memory_section
from voxflow_bench.options import BenchOptions
from voxflow_bench.peer import PeerRunner
from voxflow_bench.plot import Series, scatter_svg
from voxflow_bench.progress import ProgressLine
from voxflow_bench.report import BenchReport, ServerReport
from voxflow_bench.results import Capacity, Level, Section
from voxflow_bench.sections import VoxflowRunner

__all__ = ["run_server_bench", "run_server_bench_sync", "ttfa_plot"]


async def run_server_bench(
    url: str,
    options: BenchOptions | None = None,
    out: TextIO | None = None,
    peer: str | None = None,
) -> BenchReport:
    """Run the selected sections against the voxflow server at ``url`` (``http://host:port`` or a
    ws URL), and against the Wyoming server at ``peer`` (``tcp://host:port``) when given.

    Progress goes to ``out`` as one line redrawn in place; the report is returned, not printed.
    Raises ``VoxflowConnectionError`` if the server cannot be reached or a connection drops.
    """
    o = options or BenchOptions()
    ws_url = stream_url(url)
    peer_steps = 0 if peer is None else o.steps - (o.cancel_repeats if o.runs("cancel") else 0)
    progress = ProgressLine(out, o.steps + peer_steps)
    runner = VoxflowRunner(ws_url, o, progress)
    other = None if peer is None else PeerRunner(peer, o, progress)
    started = time.monotonic()
    full = tokens = peer_full = peer_tokens = None
    cancel = capacity = None
    levels: list[Level] = []
    peer_levels: list[Level] = []
    try:
        info = None if other is None else await other.describe()
        async with VoxflowClient.connect(ws_url) as client:
            if o.warmup:
                # Untimed: the first texts of a process pay for warm caches and allocations.
                progress.show("warming up")
                for reply in o.replies[:3]:
                    await runner.speak(client, "warmup", reply.text)
                if other is not None:
                    await other.warm_up()
            if o.runs("full"):
                full = await runner.full_text(client)
                peer_full = None if other is None else await other.full_text()
            if o.runs("tokens"):
                tokens = await runner.tokens(client)
                if other is not None and info is not None and info.streaming:
                    peer_tokens = await other.tokens()
            if o.runs("cancel"):
                cancel = await runner.cancel(client)
        if o.runs("concurrency"):
            for n in o.concurrency:
                levels.append(await runner.level(n))
                if other is not None:
                    peer_levels.append(await other.level(n))
        if o.capacity:
            capacity = await _capacity(runner, o.capacity)
        memory = http = None
        if o.runs("memory"):
            progress.show("memory and HTTP")
            memory, http = await run_memory_section(ws_url, o)
            progress.advance("memory and HTTP")
    finally:
        progress.finish()
    return BenchReport(
        options=o,
        voxflow=ServerReport(ws_url, "voxflow", full, tokens, tuple(levels)),
        cancel=cancel,
        capacity=capacity,
        peer=None
        if other is None or info is None
        else ServerReport(
            other.uri, info.name, peer_full, peer_tokens, tuple(peer_levels), info.streaming
        ),
        wall_s=time.monotonic() - started,
        memory=memory,
        http=http,
    )


async def _capacity(runner: VoxflowRunner, levels: tuple[int, ...]) -> Capacity:
    """Levels upward until the first that is not clean (it is kept, to say why)."""
    measured: list[Level] = []
    for n in sorted(levels):
        level = await runner.level(n, label="capacity")
        measured.append(level)
        if not level.clean:
            break
    return Capacity(tuple(measured))


def run_server_bench_sync(
    url: str,
    options: BenchOptions | None = None,
    out: TextIO | None = None,
    peer: str | None = None,
) -> BenchReport:
    """``run_server_bench`` on a fresh event loop, for the CLI."""
    return asyncio.run(run_server_bench(url, options, out, peer))


def ttfa_plot(report: BenchReport) -> str:
    """SVG: each reply's median full-text TTFA against the length of its first sentence."""
    series = [_series("voxflow", report.voxflow.full_text)]
    if report.peer is not None and report.peer.full_text is not None:
        series.append(_series(f"peer {report.peer.name}", report.peer.full_text))
    return scatter_svg(
        "Time to first audio, full text, per reply (median of its runs)",
        "first sentence, characters",
        "TTFA, ms",
        series,
    )


def _series(label: str, section: Section | None) -> Series:
    if section is None:
        return Series(label, ())
    chars = {run.reply: run.first_sentence_chars for run in section.runs}
    points = tuple((float(chars[name]), ttfa) for name, ttfa in section.per_reply_ttfa().items())
    return Series(label, points)
