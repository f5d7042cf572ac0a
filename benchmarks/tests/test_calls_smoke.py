"""``voxflow bench --calls`` against a real server, tiny: one level of four calls, one on each
protocol, then single turns (barged in, and on voxflow's own Wyoming port). The tool runs end to
end and its figures have the right shape; what they are is docs/benchmarks.md's."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from urllib.parse import urlsplit
from xml.dom import minidom

import pytest
from tests.support.servers import TEST_MAX_STREAMS, free_port, running_server

from voxflow import ServerSettings
from voxflow.engines.router import EngineRouter
from voxflow_bench.calls.cpu import PARTS
from voxflow_bench.calls.lines import PROTOCOLS, open_line
from voxflow_bench.calls.plan import CallPattern, TokenAt, TurnPlan
from voxflow_bench.calls.process import listening_pids
from voxflow_bench.calls.report import calls_plot, format_calls
from voxflow_bench.calls.run import CallsOptions, CallsReport, run_calls
from voxflow_bench.calls.turn import TurnResult, run_turn
from voxflow_bench.corpus import Reply, load_corpus
from voxflow_bench.tokens import llm_tokens

# Short replies keep the level short: a turn under way when the level's time is up finishes.
# The acknowledgements are a sentence of under a second; "hi-there" is three (about 4 s).
REPLIES = tuple(
    r
    for r in load_corpus(bundled="calls.tsv")
    if r.name in ("ack-sure", "ack-got-it", "ack-one-moment", "hi-there")
)
HI_THERE = next(r for r in REPLIES if r.name == "hi-there")
ACK_SURE = next(r for r in REPLIES if r.name == "ack-sure")
# An opener, then a long sentence: the second sentence arrives whole behind audio in hand.
BOOKING = next(r for r in load_corpus(bundled="calls.tsv") if r.name == "sure-booking")


@pytest.fixture(scope="module")
def servers(served_engine: EngineRouter) -> Iterator[tuple[str, str]]:
    """voxflow's HTTP URL and its Wyoming URI, served from this process."""
    wyoming = f"tcp://127.0.0.1:{free_port()}"
    # No admission by cost: these tests check the benchmark's plumbing on a machine that may be
    # busy, where a refusal would be right but is not what they are about (tests/reliability/).
    settings = ServerSettings(
        port=free_port(),
        workers=2,
        max_streams=TEST_MAX_STREAMS,
        max_load=0.0,
        wyoming_uri=wyoming,
    )
    with running_server(settings, served_engine) as url:
        yield url, wyoming


@pytest.fixture(scope="module")
def report(servers: tuple[str, str]) -> CallsReport:
    url, _ = servers
    options = CallsOptions(
        levels=(len(PROTOCOLS),),  # calls take the protocols in turn: one call each
        seconds=2.5,
        pattern=CallPattern(
            caller_speech_s=(0.3, 0.6),
            first_turn_spread_s=0.5,
            barge_in_share=0.0,
            llm_pause_share=0.0,
        ),
        settle_s=0.0,
    )
    return asyncio.run(run_calls(url, options, REPLIES))


def _plan(reply: Reply, barge_in_after_s: float | None = None) -> TurnPlan:
    """``reply`` streamed at 50 tokens a second, no pause."""
    tokens = tuple(TokenAt(i / 50.0, text) for i, text in enumerate(llm_tokens(reply.text)))
    return TurnPlan(reply, tokens, barge_in_after_s, caller_speech_s=0.5, llm_pause_s=0.0)


async def _turns(protocol: str, address: str, plans: list[TurnPlan]) -> list[TurnResult]:
    """The plans one after another on one line (one call), closed after."""
    line = open_line(protocol, address, None)
    try:
        return [await run_turn(line, f"smoke-{i}", plan) for i, plan in enumerate(plans)]
    finally:
        await line.close()


def test_every_turn_of_every_protocol_was_admitted_and_heard(report: CallsReport) -> None:
    (level,) = report.voxflow
    assert level.calls == len(PROTOCOLS) and level.server == "voxflow"
    # Every call's first turn is due within 1.1 s of a 2.5 s level (0.5 s spread, 0.6 s of
    # caller speech at most): each spoke at least once.
    assert len(level.turns) >= len(PROTOCOLS)
    assert {turn.protocol for turn in level.turns} == set(PROTOCOLS)
    assert level.failed == () and level.refused == ()
    assert len(level.admitted) == len(level.turns)
    for turn in level.turns:
        assert turn.outcome == "ok", turn  # no barge-in in this pattern
        assert turn.reply in {r.name for r in REPLIES}
        assert turn.ttfa_ms is not None and turn.ttfa_ms > 0
        assert turn.audio_ms > 0
        assert turn.heard_ms == turn.audio_ms  # a finished turn is heard to its end
        assert turn.started_at < turn.ended_at
        assert turn.starved_gaps == 0  # no LLM pause, so no gap can be the text's
    assert level.ttfa_ms.count == len(level.turns)
    assert level.heard_s > 0 and level.audio_s == pytest.approx(level.heard_s)


def test_the_server_s_cpu_and_memory_were_measured(
    report: CallsReport, servers: tuple[str, str]
) -> None:
    # The test server runs in this process: the process listening on its port is pytest's.
    port = urlsplit(servers[0]).port
    assert port is not None and listening_pids(port) == (os.getpid(),)
    (level,) = report.voxflow
    assert level.cpu_s is not None and level.cpu_s > 0
    assert level.cpu_per_heard_s is not None and level.cpu_per_heard_s > 0
    assert level.cpu_per_heard_s == pytest.approx(level.cpu_s / level.heard_s)
    assert level.rss_start_mib is not None and level.rss_start_mib > 0
    assert level.rss_peak_mib is not None and level.rss_peak_mib > 0
    assert level.client_cpu_s > 0


def test_the_server_s_metrics_say_where_its_cpu_went(report: CallsReport) -> None:
    (level,) = report.voxflow
    cpu = level.cpu_breakdown
    assert cpu is not None and level.cpu_s is not None
    assert set(PARTS) <= set(cpu.parts)
    # The parts add up to the process's CPU time, which /proc measured over the same level
    # (in clock ticks, and from just inside the two scrapes: a little slack).
    assert cpu.total_s == pytest.approx(level.cpu_s, rel=0.1, abs=0.1)
    # The calls spoke: the engine's jobs ran, windows among them (how the text stages split
    # between a segment's own and its lead's is the scheduler's business).
    windows = cpu.parts["windows"] + cpu.parts["lead_windows"]
    assert windows > 0 and cpu.engine_s >= windows
    assert 0 < cpu.context_s < windows
    # The test server keeps its phrase cache: a reply said again may be a hit, which renders
    # nothing, so what was rendered is not held against what was heard here.
    assert cpu.rendered_audio_s > 0
    per = cpu.per(level.heard_s)
    assert per is not None and per["total"] == pytest.approx(cpu.total_s / level.heard_s)


def test_the_report_prints_serialises_and_plots(report: CallsReport) -> None:
    assert report.peer is None and report.peer_levels == () and report.replies == len(REPLIES)
    text = format_calls(report)
    assert text.startswith(f"voxflow calls bench: {report.url}")
    capacity = "-" if report.capacity is None else str(report.capacity)
    assert f"  capacity: {capacity} calls" in text.splitlines()
    assert "  where the CPU goes (CPU s per heard audio s)" in text.splitlines()
    figures = json.loads(json.dumps(report.as_dict()))
    assert figures["options"]["protocols"] == list(PROTOCOLS)
    (level,) = figures["voxflow"]
    assert level["turns"] == len(report.voxflow[0].turns) and level["failed"] == 0
    assert set(level["cpu_breakdown"]["parts_s"]) >= set(PARTS)
    assert figures["floor"] is None
    assert set(level["ttfa_ms_by_protocol"]) == set(PROTOCOLS)
    svg = minidom.parseString(calls_plot(report)).documentElement
    assert svg.tagName == "svg" and len(svg.getElementsByTagName("svg")) == 2


def test_a_barged_in_turn_stops_at_the_barge_point(servers: tuple[str, str]) -> None:
    url, _ = servers
    barged, after = asyncio.run(_turns("native", url, [_plan(HI_THERE, 1.0), _plan(ACK_SURE)]))
    assert barged.outcome == "barged"
    # The caller spoke after a second of the reply (about 4 s of audio), not at its end.
    assert barged.heard_ms >= 1000.0
    assert barged.heard_ms < barged.audio_ms
    # Near the barge point: the client looks every 20 ms; a second late would be a lost barge.
    assert barged.heard_ms < 2000.0
    assert barged.ttfa_ms is not None
    # The call goes on: the next turn on the same connection is spoken whole.
    assert after.outcome == "ok" and after.heard_ms == after.audio_ms > 0


def test_a_barge_in_after_the_reply_ended_never_happens(servers: tuple[str, str]) -> None:
    url, _ = servers
    (turn,) = asyncio.run(_turns("native", url, [_plan(ACK_SURE, 30.0)]))
    assert turn.outcome == "ok"
    assert 0 < turn.heard_ms == turn.audio_ms < 30_000.0


def test_a_wyoming_turn_is_heard(servers: tuple[str, str]) -> None:
    _, wyoming = servers
    (turn,) = asyncio.run(_turns("wyoming", wyoming, [_plan(ACK_SURE)]))
    assert turn.protocol == "wyoming"
    assert turn.outcome == "ok", turn
    assert turn.ttfa_ms is not None and turn.ttfa_ms > 0
    assert turn.audio_ms > 0 and turn.heard_ms == turn.audio_ms


def test_a_turn_sent_a_sentence_at_a_time_as_pipecat_sends_it_is_heard_whole(
    servers: tuple[str, str],
) -> None:
    url, _ = servers
    plans = [_plan(BOOKING), _plan(ACK_SURE)]
    per_sentence = asyncio.run(_turns("cartesia-sentences", url, plans))
    per_token = asyncio.run(_turns("cartesia", url, plans))
    for by_sentence, by_token in zip(per_sentence, per_token, strict=True):
        assert by_sentence.protocol == "cartesia-sentences"
        assert by_sentence.outcome == "ok", by_sentence
        # The same speech, cut at the same sentences.
        assert 0.8 * by_token.audio_ms < by_sentence.audio_ms < 1.25 * by_token.audio_ms
