"""``voxflow bench-flood`` against a real server, tiny: two calls fill it, ten connections flood
it, and every one is refused in its protocol's shape; the frames, the refusal shapes and the
command's flags on their own. What the figures are is docs/benchmarks.md's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.support.servers import free_port, running_server

from voxflow import ServerSettings
from voxflow.cli.main import main
from voxflow.engines.router import EngineRouter
from voxflow_bench import flood
from voxflow_bench.corpus import Reply, load_corpus
from voxflow_bench.flood import (
    FLOOD_PROTOCOLS,
    FloodOptions,
    FloodReport,
    Knock,
    Knocker,
    format_flood,
    run_flood,
)

CONNECTIONS = 2 * len(FLOOD_PROTOCOLS)


@pytest.fixture(scope="module")
def report(served_engine: EngineRouter) -> FloodReport:
    # Two streams at most, counted (no cost limit: a busy machine must not refuse the calls).
    settings = ServerSettings(port=free_port(), workers=2, max_streams=2, max_load=0.0)
    options = FloodOptions(
        admitted=2, connections=CONNECTIONS, rounds=1, lead_s=0.5, heard_s=1.0, settle_s=0.0
    )
    with running_server(settings, served_engine) as url:
        return asyncio.run(run_flood(url, options, load_corpus(bundled="calls.tsv")))


def test_every_connection_of_the_flood_is_refused_in_its_protocol_s_shape(
    report: FloodReport,
) -> None:
    assert len(report.knocks) == CONNECTIONS
    assert [k.outcome for k in report.knocks] == ["refused"] * CONNECTIONS, report.knocks
    for protocol in FLOOD_PROTOCOLS:
        refusals = report.refusals(protocol)
        assert refusals.count == 2 and refusals.max is not None and refusals.max > 0
    assert report.refusals().count == CONNECTIONS


def test_the_admitted_calls_spoke_in_every_round(report: FloodReport) -> None:
    # One call speaks through the flood (or the quiet), the other opens its turn with it.
    for turns in (
        report.quiet_turns,
        report.flood_turns,
        report.quiet_speaking,
        report.flood_speaking,
    ):
        assert len(turns) == 1 and turns[0].admitted, turns
        assert turns[0].ttfa_ms is not None and turns[0].heard_ms > 0
    assert report.ttfa(False).count == report.ttfa(True).count == 1
    assert report.gaps(True).turns == 1


def test_the_report_renders_and_its_json_has_every_protocol(report: FloodReport) -> None:
    text = format_flood(report)
    for protocol in (*FLOOD_PROTOCOLS, "all"):
        assert f"\n  {protocol} " in text
    assert "calls opened with it" in text and "calls speaking through it" in text
    data = json.loads(json.dumps(report.as_dict()))
    assert set(data["refusals"]) == {*FLOOD_PROTOCOLS, "all"}
    assert data["refusals"]["all"]["outcomes"] == {"refused": CONNECTIONS}


def test_frames_go_out_masked_and_come_back_whole() -> None:
    async def roundtrip(text: str) -> tuple[int, bytes]:
        frame = flood._ws_frame(text)
        assert frame[1] & 0x80  # a client's frames are masked
        # The mask key follows the length (7-bit, or 16/64-bit extended); the zero mask leaves
        # the payload as it is, so without the key it reads as a server's unmasked frame.
        length = frame[1] & 0x7F
        key_at = 2 + {126: 2, 127: 8}.get(length, 0)
        assert frame[key_at : key_at + 4] == b"\0\0\0\0"
        unmasked = bytes([frame[0], length]) + frame[2:key_at] + frame[key_at + 4 :]
        reader = asyncio.StreamReader()
        reader.feed_data(unmasked)
        reader.feed_eof()  # a frame read wrong fails rather than waits
        return await flood._read_frame(reader)

    for size in (5, 200, 70_000):  # each length form: 7-bit, 16-bit, 64-bit
        text = "x" * size
        assert asyncio.run(roundtrip(text)) == (0x1, text.encode())


@pytest.mark.parametrize(
    ("message", "refused"),
    [
        ({"type": "error", "code": "concurrency_limited"}, True),  # native
        ({"error": "too_many_concurrent_requests", "code": 1013}, True),  # ElevenLabs
        ({"type": "error", "error_code": "Too many concurrent requests"}, True),  # Cartesia
        ({"type": "Error", "code": "TOO_MANY_REQUESTS"}, True),  # Deepgram
        ({"type": "error", "code": "unknown_voice"}, False),
        ({"type": "audio", "audio": "AAAA"}, False),
        (["not", "an", "object"], False),
    ],
)
def test_a_refusal_is_told_from_other_answers(message: object, refused: bool) -> None:
    assert flood._refusal(message) is refused


def test_the_knocker_s_process_raises_its_error_in_the_asking_one() -> None:
    knocker = Knocker()
    try:
        with pytest.raises(ValueError, match="plain HTTP"):
            asyncio.run(knocker.flood("https://127.0.0.1:9", FloodOptions()))
        # Still knocking after an error: a server that is not there fails every connection.
        options = FloodOptions(connections=2, protocols=("openai",), timeout_s=2.0)
        knocks = asyncio.run(knocker.flood(f"http://127.0.0.1:{free_port()}", options))
        assert [k.outcome for k in knocks] == ["failed: ConnectionRefusedError"] * 2
    finally:
        knocker.close()


def test_the_command_s_flags_reach_the_flood(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[str, FloodOptions, int]] = []

    async def recorded(url: str, options: FloodOptions, replies: list[Reply], _progress: object):  # type: ignore[no-untyped-def]
        seen.append((url, options, len(replies)))
        return FloodReport(url, options, (Knock("openai", "refused", 12.5),), (), (), 1.0)

    # The command imports run_flood from its module when it runs: replace it there.
    monkeypatch.setattr(flood, "run_flood", recorded)
    out = tmp_path / "flood.json"
    argv = ["bench-flood", "--url", "http://127.0.0.1:9", "--admitted", "3"]
    argv += ["--connections", "12", "--rounds", "2", "--protocols", "openai,deepgram"]
    argv += ["--json", str(out)]
    assert main(argv) == 0
    ((url, options, replies),) = seen
    assert url == "http://127.0.0.1:9" and replies > 0
    assert (options.admitted, options.connections, options.rounds) == (3, 12, 2)
    assert options.protocols == ("openai", "deepgram")
    assert "flood: 12 connections" in capsys.readouterr().out
    assert json.loads(out.read_text())["refusals"]["all"]["outcomes"] == {"refused": 1}
