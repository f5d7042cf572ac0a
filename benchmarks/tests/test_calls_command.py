"""``voxflow bench --calls``: the flags reach the calls benchmark, and its report, JSON and plot
come out. The run itself is replaced (test_calls_smoke.py runs it against a server)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from xml.dom import minidom

import pytest

from voxflow.cli.main import main
from voxflow_bench.calls import run as calls_run
from voxflow_bench.calls.level import LevelResult
from voxflow_bench.calls.run import CallsOptions, CallsReport
from voxflow_bench.calls.turn import TurnResult
from voxflow_bench.corpus import Reply, load_corpus


class RecordedRun:
    """Stands in for ``run_calls``: keeps what it was asked, answers one admitted turn a level."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, CallsOptions, tuple[Reply, ...], str | None]] = []

    async def __call__(
        self, url: str, options: CallsOptions, replies: Sequence[Reply], peer: str | None = None
    ) -> CallsReport:
        self.calls.append((url, options, tuple(replies), peer))
        turn = TurnResult(
            "native", replies[0].name, "ok", ttfa_ms=90.0, audio_ms=900.0, heard_ms=900.0
        )
        levels = tuple(
            LevelResult("voxflow", n, options.seconds, (turn,), None, None, None)
            for n in options.levels
        )
        return CallsReport(url, peer, options, len(replies), levels)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> RecordedRun:
    run = RecordedRun()
    # The command imports run_calls from its module when it runs: replace it there.
    monkeypatch.setattr(calls_run, "run_calls", run)
    return run


def test_the_flags_reach_the_options_and_the_outputs_are_written(
    recorded: RecordedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_json, plot = tmp_path / "calls.json", tmp_path / "calls.svg"
    argv = [
        "bench",
        "--url",
        "http://127.0.0.1:9",
        "--peer",
        "tcp://127.0.0.1:10200",
        "--calls",
        "1,2,4",
        "--calls-seconds",
        "7",
        "--protocols",
        "native, deepgram",
        "--burstiness",
        "0.5",
        "--barge-in",
        "0",
        "--llm-pauses",
        "0.25",
        "--seed",
        "7",
        "--token-rate",
        "30",
        "--voice",
        "kokoro:af_heart",
        "--json",
        str(report_json),
        "--plot",
        str(plot),
    ]
    assert main(argv) == 0
    ((url, options, replies, peer),) = recorded.calls
    assert (url, peer) == ("http://127.0.0.1:9", "tcp://127.0.0.1:10200")
    assert options.levels == (1, 2, 4) and options.seconds == 7.0
    assert options.protocols == ("native", "deepgram")
    assert options.voice == "kokoro:af_heart"
    pattern = options.pattern
    assert (pattern.burstiness, pattern.barge_in_share, pattern.llm_pause_share) == (0.5, 0, 0.25)
    assert (pattern.seed, pattern.token_rate) == (7, 30.0)
    # The calls have a corpus of their own by default.
    assert replies == load_corpus(bundled="calls.tsv")
    out = capsys.readouterr().out
    assert out.startswith("voxflow calls bench: http://127.0.0.1:9; peer at tcp://127.0.0.1:10200")
    assert "  capacity: 4 calls" in out.splitlines()
    written = json.loads(report_json.read_text())
    assert written["options"] == json.loads(json.dumps(options.as_dict()))
    assert written["capacity"] == 4 and [lv["calls"] for lv in written["voxflow"]] == [1, 2, 4]
    assert minidom.parseString(plot.read_text()).documentElement.tagName == "svg"


def test_replies_limits_the_calls_corpus(recorded: RecordedRun) -> None:
    assert main(["bench", "--calls", "1", "--replies", "3"]) == 0
    ((_, options, replies, peer),) = recorded.calls
    assert replies == load_corpus(bundled="calls.tsv")[:3]
    assert peer is None
    # The defaults: every protocol, the pattern's own shares.
    assert options.protocols == ("native", "elevenlabs", "cartesia", "deepgram")
    assert (options.pattern.barge_in_share, options.pattern.llm_pause_share) == (0.15, 0.3)


def test_floor_renders_the_calls_corpus_before_the_levels(
    recorded: RecordedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The first reply of calls.tsv (two sentences), with the real bundled voice.
    report_json = tmp_path / "calls.json"
    argv = ["bench", "--calls", "1", "--replies", "1", "--floor", "--json", str(report_json)]
    assert main(argv) == 0
    assert len(recorded.calls) == 1
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("engine floor (whole sentences, one")]
    assert " CPU s per audio s (2 sentences, " in line and line.endswith(", voice joe)")
    floor = json.loads(report_json.read_text())["floor"]
    assert floor["sentences"] == 2 and floor["voice"] == "joe" and floor["audio_s"] > 0
    assert floor["per_audio_s"] == pytest.approx(
        floor["text_stage_per_audio_s"] + floor["render_per_audio_s"], abs=1e-4
    )


def test_without_floor_the_report_has_no_floor(recorded: RecordedRun, tmp_path: Path) -> None:
    report_json = tmp_path / "calls.json"
    assert main(["bench", "--calls", "1", "--json", str(report_json)]) == 0
    assert json.loads(report_json.read_text())["floor"] is None


@pytest.mark.parametrize(
    "flags",
    [
        ["--protocols", "native,sip"],
        ["--calls-seconds", "0"],
        ["--barge-in", "1.5"],
        ["--calls", "0,2"],
    ],
)
def test_bad_calls_flags_are_refused_before_any_run(
    recorded: RecordedRun, flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--calls", "1", *flags] if "--calls" not in flags else ["bench", *flags]
    assert main(argv) == 2
    assert recorded.calls == []
    assert capsys.readouterr().err.startswith("voxflow: error: ")
