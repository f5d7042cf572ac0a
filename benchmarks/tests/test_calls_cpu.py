"""Where a level's CPU goes: the server's ``/metrics`` counters parsed, diffed over a level, per
second heard, in the JSON and in the report's section."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from voxflow_bench.calls.cpu import (
    PARTS,
    CpuBreakdown,
    CpuCounters,
    metrics_url,
    parse_counters,
    scrape,
)
from voxflow_bench.calls.floor import EngineFloor
from voxflow_bench.calls.level import LevelResult
from voxflow_bench.calls.report import cpu_section, format_calls
from voxflow_bench.calls.run import CallsOptions, CallsReport
from voxflow_bench.calls.turn import TurnResult


def _metrics(
    parts: dict[str, float], context: float, rendered: float, started: float = 1.7958845426e09
) -> str:
    """A ``/metrics`` body as voxflow serves it (prometheus_client's text format), trimmed."""
    cpu = "\n".join(f'voxflow_cpu_seconds_total{{part="{p}"}} {s!r}' for p, s in parts.items())
    return f"""\
# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds {started!r}
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 2.91
python_info{{implementation="CPython",major="3",minor="11",patchlevel="7",version="3.11.7"}} 1.0
voxflow_chunk_gap_seconds_bucket{{le="0.005"}} 0.0
voxflow_chunk_gap_seconds_created 1.7958845449524763e+09
voxflow_threads{{kind="os"}} 16.0
voxflow_workers 2.0
# HELP voxflow_cpu_seconds_total CPU time of the server process, by part (they add up to the \
process's)
# TYPE voxflow_cpu_seconds_total counter
{cpu}
# HELP voxflow_window_context_cpu_seconds_total Of the windows' CPU time, what their decoder \
context takes (estimated)
# TYPE voxflow_window_context_cpu_seconds_total counter
voxflow_window_context_cpu_seconds_total {context!r}
# HELP voxflow_rendered_audio_seconds_total Audio the synthesis windows rendered (leads' and \
what no listener heard included)
# TYPE voxflow_rendered_audio_seconds_total counter
voxflow_rendered_audio_seconds_total {rendered!r}
"""


BEFORE = {
    "text_stage": 0.18468014499800872,
    "lead_text_stage": 0.015979085000000004,
    "windows": 0.8593352400001849,
    "lead_windows": 0.09117267,
    "scheduling": 0.02,
    "encode": 0.0,
    "event_loop": 1.481047687,
    "other": 0.3073705910018063,
}
# Over the level: 10 s of CPU, text stage 1, lead text 0.1, windows 6, lead windows 0.5,
# scheduling 0.3, encode 0.4, event loop 1.2, other 0.5.
ADDED = dict(zip(PARTS, (1.0, 0.1, 6.0, 0.5, 0.3, 0.4, 1.2, 0.5), strict=True))
AFTER = {p: BEFORE[p] + ADDED[p] for p in PARTS}


def test_the_counters_are_read_from_a_metrics_body() -> None:
    counters = parse_counters(_metrics(BEFORE, 0.2293111902227412, 11.482267573696145))
    assert counters is not None
    assert dict(counters.parts) == BEFORE
    assert counters.context_s == pytest.approx(0.2293111902227412)
    assert counters.rendered_audio_s == pytest.approx(11.482267573696145)
    assert counters.started_at == pytest.approx(1.7958845426e09)


def test_a_server_without_the_counters_has_none() -> None:
    # The Wyoming peer has no /metrics at all; an older voxflow has one without the parts.
    assert parse_counters("") is None
    assert parse_counters("process_cpu_seconds_total 2.91\nvoxflow_workers 2.0\n") is None


def test_a_part_label_among_others_and_an_unknown_part_are_read() -> None:
    text = (
        'voxflow_cpu_seconds_total{instance="a",part="windows"} 2.5\n'
        'voxflow_cpu_seconds_total{part="gc"} 0.25\n'
        "voxflow_cpu_seconds_total_created 1.7e+09\n"
    )
    counters = parse_counters(text)
    assert counters is not None
    assert dict(counters.parts) == {"windows": 2.5, "gc": 0.25}
    assert (counters.context_s, counters.rendered_audio_s, counters.started_at) == (0.0, 0.0, None)


def _breakdown() -> CpuBreakdown:
    before = parse_counters(_metrics(BEFORE, 0.25, 11.5))
    after = parse_counters(_metrics(AFTER, 0.25 + 1.5, 11.5 + 60.0))
    assert before is not None and after is not None
    breakdown = CpuBreakdown.between(before, after)
    assert breakdown is not None
    return breakdown


def test_a_level_s_breakdown_is_what_the_counters_added() -> None:
    breakdown = _breakdown()
    assert list(breakdown.parts) == list(PARTS)
    for part in PARTS:
        assert breakdown.parts[part] == pytest.approx(ADDED[part])
    assert breakdown.total_s == pytest.approx(10.0)
    assert breakdown.engine_s == pytest.approx(7.6)  # text stages and windows, leads' too
    assert breakdown.context_s == pytest.approx(1.5)
    assert breakdown.rendered_audio_s == pytest.approx(60.0)


def test_the_breakdown_per_heard_second() -> None:
    per = _breakdown().per(50.0)
    assert per is not None
    assert per["windows"] == pytest.approx(0.12)
    assert per["context"] == pytest.approx(0.03)
    assert per["total"] == pytest.approx(0.2)
    assert sum(per[p] for p in PARTS) == pytest.approx(per["total"])
    assert _breakdown().per(0.0) is None


def test_a_part_may_go_back_and_the_total_still_adds_up() -> None:
    # An encoder thread that exited takes its time out of ``encode``; ``other`` gets it.
    before = CpuCounters({"encode": 1.0, "other": 2.0}, 0.0, 0.0, 5.0)
    after = CpuCounters({"encode": 0.5, "other": 3.0}, 0.0, 0.0, 5.0)
    breakdown = CpuBreakdown.between(before, after)
    assert breakdown is not None
    assert breakdown.parts["encode"] == pytest.approx(-0.5)
    assert breakdown.total_s == pytest.approx(0.5)
    # Parts the scrape lacks count as 0, and are listed all the same.
    assert breakdown.parts["windows"] == 0.0


def test_no_breakdown_across_a_restart_or_another_process() -> None:
    before = CpuCounters(BEFORE, 0.0, 0.0, 100.0)
    assert CpuBreakdown.between(before, CpuCounters(AFTER, 0.0, 0.0, 101.0)) is None


def test_the_metrics_url_of_a_server_url() -> None:
    assert metrics_url("http://127.0.0.1:8765") == "http://127.0.0.1:8765/metrics"
    assert metrics_url("ws://host:9/v1/stream?x=1") == "http://host:9/metrics"
    assert metrics_url("https://tts.example/api") == "https://tts.example/metrics"


@pytest.fixture
def metrics_server() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server whose ``/metrics`` answers the next body of the list (404 past
    its end, and on any other path)."""
    bodies: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/metrics" or not bodies:
                self.send_error(404)
                return
            body = bodies.pop(0).encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def test_a_scrape_reads_the_counters_off_the_event_loop(
    metrics_server: tuple[str, list[str]],
) -> None:
    url, bodies = metrics_server
    bodies.append(_metrics(BEFORE, 0.25, 11.5))

    async def scrape_while_ticking() -> tuple[CpuCounters | None, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(tick())
        counters = await scrape(metrics_url(url))
        ticker.cancel()
        return counters, ticks

    counters, ticks = asyncio.run(scrape_while_ticking())
    assert counters is not None and dict(counters.parts) == BEFORE
    assert ticks > 0  # the loop ran while the request was under way


def test_a_scrape_that_fails_gives_none(metrics_server: tuple[str, list[str]]) -> None:
    url, _ = metrics_server
    assert asyncio.run(scrape(metrics_url(url))) is None  # 404
    assert asyncio.run(scrape(f"{url}/other")) is None
    assert asyncio.run(scrape("http://127.0.0.1:9/metrics")) is None  # nothing listens


# -- on a level, in its JSON and in the report ---------------------------------------------------


def _level(calls: int, breakdown: CpuBreakdown | None, server: str = "voxflow") -> LevelResult:
    # 60 s rendered, 55 s received, 50 s heard (a barge-in cut 5 s of the second turn).
    turns = (
        TurnResult("native", "a", "ok", ttfa_ms=150.0, audio_ms=30_000.0, heard_ms=30_000.0),
        TurnResult("deepgram", "b", "barged", ttfa_ms=160.0, audio_ms=25_000.0, heard_ms=20_000.0),
    )
    return LevelResult(server, calls, 60.0, turns, 10.2, 300.0, 320.0, 1.0, breakdown)


FLOOR = EngineFloor("joe", 110, 400.0, 4.0, 28.0, 32.0)  # 0.01 + 0.07 = 0.08 CPU s per audio s


def test_the_level_s_json_has_the_breakdown_per_heard_second() -> None:
    figures = json.loads(json.dumps(_level(4, _breakdown()).as_dict()))
    assert figures["cpu_per_heard_s"] == pytest.approx(10.2 / 50.0)
    cpu = figures["cpu_breakdown"]
    assert set(cpu) == {"parts_s", "total_s", "context_s", "rendered_audio_s", "per_heard_s"}
    assert cpu["parts_s"] == pytest.approx(ADDED)
    assert (cpu["total_s"], cpu["context_s"], cpu["rendered_audio_s"]) == (10.0, 1.5, 60.0)
    assert cpu["per_heard_s"]["total"] == pytest.approx(0.2)
    assert cpu["per_heard_s"]["context"] == pytest.approx(0.03)
    assert cpu["per_heard_s"]["event_loop"] == pytest.approx(0.024)


def _section_rows(lines: list[str]) -> list[list[str]]:
    return [line.split() for line in lines if line.strip() and line.split()[0].isdigit()]


def test_the_section_shows_each_part_the_context_and_the_audio_per_level() -> None:
    lines = cpu_section([_level(4, _breakdown()), _level(8, None)])
    assert lines[:2] == ["", "  where the CPU goes (CPU s per heard audio s)"]
    header = lines[2]
    for name in ("text stage", "lead text", "lead windows", "scheduling", "event loop", "other"):
        assert name in header
    assert header.endswith("rendered s  received s  heard s  not heard")
    assert "x floor" not in header
    (row,) = _section_rows(lines)  # the level without a breakdown has no row
    assert row == [
        "4",
        *("0.0200", "0.0020", "0.1200", "0.0100", "0.0060", "0.0080", "0.0240", "0.0100"),
        "0.2000",  # total
        "0.0300",  # context
        "60.0",  # rendered
        "55.0",  # received
        "50.0",  # heard
        "16.7%",  # rendered and not heard: 10 of 60 s
    ]
    assert lines[-1].startswith("  from the server's /metrics; context: ")


def test_the_section_sets_each_level_beside_the_engine_floor() -> None:
    lines = cpu_section([_level(4, _breakdown())], FLOOR)
    assert "x floor" in lines[2]
    (row,) = _section_rows(lines)
    assert row[11] == "2.50x"  # 0.2 per heard s over the floor's 0.08
    assert "x floor: total over the engine floor" in lines[-1]


def test_no_section_without_a_breakdown() -> None:
    assert cpu_section([_level(4, None), _level(8, None)]) == []


def test_the_report_prints_the_floor_and_the_section_after_voxflow_s_table() -> None:
    options = CallsOptions(levels=(4,), seconds=60.0)
    report = CallsReport(
        "http://127.0.0.1:8765",
        "tcp://127.0.0.1:10200",
        options,
        59,
        (_level(4, _breakdown()),),
        (_level(4, None, server="peer"),),
        floor=FLOOR,
    )
    lines = format_calls(report).splitlines()
    assert (
        "engine floor (whole sentences, one thread): text stage 0.0100 + render 0.0700 = "
        "0.0800 CPU s per audio s (110 sentences, 400.0 s of audio, voice joe)"
    ) in lines
    section = lines.index("  where the CPU goes (CPU s per heard audio s)")
    assert lines.index("voxflow") < section < lines.index("peer")
    assert lines.count("  where the CPU goes (CPU s per heard audio s)") == 1  # none for the peer
    figures = json.loads(json.dumps(report.as_dict()))
    assert figures["floor"]["per_audio_s"] == pytest.approx(0.08)
    assert figures["floor"]["text_stage_per_audio_s"] == pytest.approx(0.01)
    assert figures["voxflow"][0]["cpu_breakdown"]["total_s"] == 10.0
    assert figures["peer_levels"][0]["cpu_breakdown"] is None
