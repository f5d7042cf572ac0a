"""``voxflow bench`` against a real server (and voxflow's own Wyoming port as the peer), with
tiny options."""

from __future__ import annotations

import asyncio
import io
import json
import socket
from collections.abc import Iterator

import pytest
from tests.support.servers import running_server

from voxflow import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow_bench.corpus import load_corpus
from voxflow_bench.options import LONG_TEXT, BenchOptions
from voxflow_bench.report import BenchReport, format_report
from voxflow_bench.server import run_server_bench, ttfa_plot


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def bench(served_engine: EngineRouter) -> Iterator[tuple[BenchReport, str]]:
    wyoming_port = _free_port()
    # No cost limit: the sections run whole-text requests side by side, each counted at one
    # worker's share, while the ones before are still heard; what admission refuses is its own
    # tests' (tests/session), not this one's.
    settings = ServerSettings(
        port=_free_port(),
        workers=2,
        wyoming_uri=f"tcp://127.0.0.1:{wyoming_port}",
        max_load=0,
    )
    corpus = load_corpus()
    replies = tuple(r for r in corpus if r.name in ("ack-sure", "lights", "reschedule"))
    options = BenchOptions(
        replies=replies,
        concurrency=(1, 2),
        rounds=1,
        # Out of order on purpose: the sweep must run its levels upward whatever the order given.
        capacity=(2, 1),
        cancel_repeats=2,
        cancel_grace_ms=200,
        # Two sentences (9 s of audio), rendered within the server's lead at once: the default
        # text (32 s) keeps the memory section's streams 12 s waiting for their listener.
        cancel_text=LONG_TEXT[: LONG_TEXT.index(" You will")],
        long_text_chars=600,
        busy_streams=2,
        # The figures' shape, not their size: no wait before or between each reading's three
        # samples (8 s less than the defaults'), and tokens four times as fast as an LLM's
        # (4 s less).
        memory_settle_s=0.0,
        memory_sample_gap_s=0.0,
        token_rate=200.0,
        stopped_reader_s=1.5,
    )
    progress = io.StringIO()
    with running_server(settings, served_engine) as url:
        peer = f"tcp://127.0.0.1:{wyoming_port}"
        report = asyncio.run(run_server_bench(url, options, progress, peer=peer))
    yield report, progress.getvalue()


def test_every_section_ran_without_errors(bench: tuple[BenchReport, str]) -> None:
    report, _ = bench
    v, p = report.voxflow, report.peer
    assert v.full_text is not None and v.tokens is not None
    assert [r.reply for r in v.full_text.runs] == ["reschedule", "ack-sure", "lights"]
    assert v.full_text.errors == 0 and v.tokens.errors == 0
    assert [level.connections for level in v.concurrency] == [1, 2]
    assert all(level.section.errors == 0 for level in v.concurrency)
    assert p is not None and p.full_text is not None and p.full_text.errors == 0
    # voxflow's Wyoming port supports streaming text, so the peer's tokens section ran too.
    assert p.streaming and p.tokens is not None and p.tokens.errors == 0
    assert [level.connections for level in p.concurrency] == [1, 2]


def test_latencies_are_positive_and_ordered(bench: tuple[BenchReport, str]) -> None:
    report, _ = bench
    full, tokens = report.voxflow.full_text, report.voxflow.tokens
    assert full is not None and tokens is not None
    for section in (full, tokens):
        assert section.ttfa_ms.count == len(section.runs)
        for run in section.runs:
            assert run.ttfa_ms is not None and run.server_ttfa_ms is not None
            # The server's span (text received -> first audio handed to the socket) lies inside
            # the client's (text sent -> first audio received), on the same monotonic clock (the
            # server runs in this process): a wrong reference point on either side breaks this.
            assert 0 < run.server_ttfa_ms <= run.ttfa_ms
    for run in tokens.runs:
        # No audio before the token that made the first segment certain had been sent.
        assert run.ready_ms is not None and run.ready_ms > 0
    # The worst list ranks the replies by their own runs (one run each here), with their own
    # first sentences: a reply paired with another's figures would show up here.
    ranked = sorted(full.good, key=lambda run: -(run.ttfa_ms or 0.0))
    assert [(w.reply, w.ttfa_ms, w.first_sentence_chars) for w in full.worst()] == [
        (run.reply, run.ttfa_ms, run.first_sentence_chars) for run in ranked
    ]


def test_cancel_leaves_no_audio_after_cancelled(bench: tuple[BenchReport, str]) -> None:
    c = bench[0].cancel
    assert c is not None
    assert c.audio_after_cancelled == 0
    assert c.client_latency_ms.count + c.missed == c.runs


def test_capacity_sweep_reports_its_levels(bench: tuple[BenchReport, str]) -> None:
    capacity = bench[0].capacity
    assert capacity is not None
    levels = capacity.levels
    # Asked for (2, 1): run upward, each level with as many clients as it says (one round).
    assert [level.connections for level in levels] == [1, 2][: len(levels)]
    assert all(len(level.section.runs) == level.connections for level in levels)
    # Whether a level is clean depends on the machine; the stopping rule does not: every level
    # before the last is clean, and the sweep ends early only at a level that is not.
    assert all(level.clean for level in levels[:-1])
    assert len(levels) == 2 or not levels[-1].clean


def test_report_formats_serialises_and_plots(bench: tuple[BenchReport, str]) -> None:
    report, progress = bench
    text = format_report(report)
    for heading in ("1. Full text", "2. LLM tokens", "3. Cancel", "4. Concurrency", "5. Capacity"):
        assert heading in text
    assert "voxflow / peer" in text and "worst voxflow: " in text
    data = json.loads(json.dumps(report.as_dict()))
    assert set(data) == {
        "options",
        "voxflow",
        "cancel",
        "capacity",
        "peer",
        "memory",
        "http",
        "wall_s",
    }
    assert "6. Memory" in text and "7. HTTP" in text
    assert len(data["voxflow"]["full_text"]["per_run"]) == 3
    svg = ttfa_plot(report)
    assert svg.count("<circle") == 3 + 3 + 2  # a point per reply and server, a legend each
    assert "\r" in progress and progress.endswith("\n")


def test_memory_section_reads_the_servers_resident_size(bench: tuple[BenchReport, str]) -> None:
    report = bench[0]
    memory, http = report.memory, report.http
    assert memory is not None and http is not None
    # The model alone is tens of MiB: a baseline that small means /metrics was misread.
    assert memory.baseline_mib > 50
    assert [name for name, _ in memory.after_mib] == [
        "ordinary reply",
        "250 digits",
        f"{http.chars:,}-character text",
    ]
    assert memory.busy_streams == 2 and memory.busy_peak_mib > 0
    # A client that reads nothing: sampled while it was connected, then gone.
    assert 0 < memory.stopped_held_mib <= memory.stopped_peak_mib
    assert memory.after_stopped_mib > 50
    # The long request's audio is real speech: seconds of it, delivered faster than real time.
    assert 550 <= http.chars <= 600
    assert http.audio_s > 10 and 0 < http.first_byte_s < http.wall_s < http.audio_s
