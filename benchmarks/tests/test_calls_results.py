"""The calls benchmark's figures from hand-made turns: a level's shares and service level, the
capacity over levels, the gaps in LLM pauses, the report and its plot."""

from __future__ import annotations

import asyncio
import time
from xml.dom import minidom

import pytest

from voxflow_bench.calls.level import LevelResult, ServiceLevel
from voxflow_bench.calls.lines import Audio, Finished, LineEvent
from voxflow_bench.calls.plan import TokenAt, TurnPlan
from voxflow_bench.calls.report import calls_plot, format_calls
from voxflow_bench.calls.run import CallsOptions, CallsReport, capacity
from voxflow_bench.calls.turn import TurnResult, run_turn, split_gaps
from voxflow_bench.corpus import Reply

GOAL = ServiceLevel(ttfa_p95_ms=350.0, gap_share=0.005, refusals=0)


def _turn(
    outcome: str = "ok",
    *,
    ttfa_ms: float | None = 100.0,
    audio_ms: float = 4000.0,
    heard_ms: float | None = None,
    gap_ms: float = 0.0,
    starved_gap_ms: float = 0.0,
    protocol: str = "native",
    reply: str = "sure-booking",
) -> TurnResult:
    """A turn as ``run_turn`` would report it: one gap of ``gap_ms`` if any, likewise starved."""
    if outcome not in ("ok", "barged"):
        return TurnResult(
            protocol, reply, outcome, refusal_ms=20.0 if outcome == "refused" else None
        )
    return TurnResult(
        protocol,
        reply,
        outcome,
        ttfa_ms=ttfa_ms,
        audio_ms=audio_ms,
        heard_ms=audio_ms if heard_ms is None else heard_ms,
        gaps=1 if gap_ms else 0,
        gap_ms=gap_ms,
        longest_gap_ms=gap_ms,
        starved_gaps=1 if starved_gap_ms else 0,
        starved_gap_ms=starved_gap_ms,
    )


def _level(
    turns: list[TurnResult], calls: int = 4, cpu_s: float | None = 2.0, server: str = "voxflow"
) -> LevelResult:
    return LevelResult(
        server=server,
        calls=calls,
        seconds=10.0,
        turns=tuple(turns),
        cpu_s=cpu_s,
        rss_start_mib=None if cpu_s is None else 200.0,
        rss_peak_mib=None if cpu_s is None else 250.0,
    )


def _passing(calls: int) -> LevelResult:
    return _level([_turn(), _turn(outcome="barged", heard_ms=1500.0)], calls=calls)


def _failing(calls: int) -> LevelResult:
    return _level([_turn(ttfa_ms=900.0), _turn(ttfa_ms=950.0)], calls=calls)


# -- one level -------------------------------------------------------------------------------


def test_turns_split_into_admitted_refused_and_failed() -> None:
    turns = [
        _turn("ok"),
        _turn("barged", heard_ms=800.0),
        _turn("refused"),
        _turn("refused"),
        _turn("timeout"),
        _turn("connection lost: 1006"),
    ]
    level = _level(turns)
    assert [t.outcome for t in level.admitted] == ["ok", "barged"]
    assert len(level.refused) == 2
    assert [t.outcome for t in level.failed] == ["timeout", "connection lost: 1006"]
    assert level.refusal_ms.count == 2
    figures = level.as_dict()
    assert (figures["turns"], figures["admitted"], figures["barged"]) == (6, 2, 1)
    assert (figures["refused"], figures["failed"]) == (2, 2)
    assert figures["failures"] == ["connection lost: 1006", "timeout"]


def test_gap_share_counts_the_server_s_gaps_only() -> None:
    level = _level(
        [
            _turn(heard_ms=4000.0, gap_ms=40.0),
            _turn(heard_ms=6000.0, starved_gap_ms=500.0),
            _turn(heard_ms=10000.0, gap_ms=60.0, starved_gap_ms=300.0),
            _turn("refused"),  # heard nothing: not part of either share
        ]
    )
    assert level.heard_s == pytest.approx(20.0)
    assert level.gap_share == pytest.approx(100.0 / 20000.0)
    assert level.starved_gap_share == pytest.approx(800.0 / 20000.0)
    # A turn whose only gap fell in an LLM pause has no gap of the server's.
    assert level.turns_with_gap == 2
    assert level.longest_gap_ms == 60.0
    assert level.as_dict()["starved_gaps"] == 2


def test_shares_are_zero_when_nothing_was_heard() -> None:
    level = _level([_turn("refused"), _turn("timeout")])
    assert (level.gap_share, level.starved_gap_share, level.turns_with_gap) == (0.0, 0.0, 0)
    assert level.ttfa_ms.count == 0 and level.ttfa_ms.p95 is None


def test_barged_turns_count_what_was_heard_not_what_was_received() -> None:
    level = _level([_turn("barged", audio_ms=6000.0, heard_ms=1000.0, gap_ms=20.0)])
    assert level.audio_s == pytest.approx(6.0)
    assert level.heard_s == pytest.approx(1.0)
    assert level.gap_share == pytest.approx(0.02)


def test_cpu_per_heard_second_needs_cpu_and_audio_heard() -> None:
    assert _level([_turn(audio_ms=4000.0)], cpu_s=2.0).cpu_per_heard_s == pytest.approx(0.5)
    assert _level([_turn(audio_ms=4000.0)], cpu_s=None).cpu_per_heard_s is None
    assert _level([_turn("refused")], cpu_s=2.0).cpu_per_heard_s is None
    assert _level([_turn("barged", audio_ms=3000.0, heard_ms=0.0)]).cpu_per_heard_s is None


def test_cpu_is_charged_per_second_heard_not_received() -> None:
    # 6 s received, 1 s heard before the barge-in, 4 s of a finished turn: 5 s heard.
    level = _level(
        [_turn("barged", audio_ms=6000.0, heard_ms=1000.0), _turn(audio_ms=4000.0)], cpu_s=1.0
    )
    assert level.cpu_per_heard_s == pytest.approx(0.2)
    figures = level.as_dict()
    assert figures["cpu_per_heard_s"] == pytest.approx(0.2)
    assert (figures["audio_s"], figures["heard_s"]) == (10.0, 5.0)
    assert "cpu_per_audio_s" not in figures
    assert figures["cpu_breakdown"] is None  # no /metrics breakdown for this level


def test_ttfa_is_over_admitted_turns_with_audio() -> None:
    level = _level(
        [_turn(ttfa_ms=100.0), _turn(ttfa_ms=300.0), _turn(ttfa_ms=None), _turn("refused")]
    )
    assert level.ttfa_ms.count == 2
    assert level.ttfa_ms.max == 300.0
    by_protocol = level.as_dict()["ttfa_ms_by_protocol"]
    assert isinstance(by_protocol, dict) and set(by_protocol) == {"native"}


def test_a_level_within_the_service_level() -> None:
    level = _level([_turn(ttfa_ms=t, heard_ms=10000.0, gap_ms=20.0) for t in (80, 120, 200)])
    assert level.within(GOAL)


def test_slow_first_audio_breaks_the_service_level() -> None:
    turns = [_turn(ttfa_ms=100.0) for _ in range(9)] + [_turn(ttfa_ms=2000.0)]
    level = _level(turns)
    assert level.ttfa_ms.p95 is not None and level.ttfa_ms.p95 > 350.0
    assert not level.within(GOAL)
    assert level.within(ServiceLevel(ttfa_p95_ms=5000.0))


def test_gaps_break_the_service_level_but_llm_pauses_do_not() -> None:
    gapped = _level([_turn(heard_ms=10000.0, gap_ms=100.0)])  # 1% of the audio
    assert not gapped.within(GOAL)
    assert gapped.within(ServiceLevel(gap_share=0.02))
    starved = _level([_turn(heard_ms=10000.0, starved_gap_ms=2000.0)])
    assert starved.within(GOAL)


def test_refusals_break_the_service_level_past_its_allowance() -> None:
    level = _level([_turn(), _turn(), _turn("refused")])
    assert not level.within(GOAL)
    assert level.within(ServiceLevel(refusals=1))


def test_any_failed_turn_breaks_the_service_level() -> None:
    level = _level([_turn() for _ in range(20)] + [_turn("timeout")])
    assert not level.within(ServiceLevel(ttfa_p95_ms=1e9, gap_share=1.0, refusals=100))


def test_a_level_without_admitted_turns_is_not_within() -> None:
    lenient = ServiceLevel(ttfa_p95_ms=1e9, gap_share=1.0, refusals=100)
    assert not _level([_turn("refused"), _turn("refused")]).within(lenient)
    assert not _level([]).within(lenient)
    # Admitted, but no audio ever came: no TTFA to judge.
    assert not _level([_turn(ttfa_ms=None, audio_ms=0.0)]).within(lenient)


def test_worst_gaps_are_the_longest_first_and_skip_starved_ones() -> None:
    turns = [
        _turn(reply="a", gap_ms=30.0),
        _turn(reply="b", gap_ms=120.0),
        _turn(reply="c"),
        _turn(reply="d", starved_gap_ms=900.0),
        _turn(reply="e", gap_ms=75.0),
    ]
    level = _level(turns)
    assert [t.reply for t in level.worst_gaps()] == ["b", "e", "a"]
    assert [t.reply for t in level.worst_gaps(count=2)] == ["b", "e"]
    worst = level.as_dict()["worst_gaps"]
    assert isinstance(worst, list) and [gap["reply"] for gap in worst] == ["b", "e", "a"]


def test_the_slowest_first_audios_are_the_latest_first_and_skip_turns_without_audio() -> None:
    turns = [
        _turn(reply="a", ttfa_ms=180.0),
        _turn(reply="b", ttfa_ms=910.0),
        _turn(reply="c", ttfa_ms=None, audio_ms=0.0),
        _turn("refused", reply="d"),
        _turn(reply="e", ttfa_ms=420.0),
    ]
    level = _level(turns)
    assert [t.reply for t in level.slowest_first_audio()] == ["b", "e", "a"]
    assert [t.reply for t in level.slowest_first_audio(count=1)] == ["b"]
    slowest = level.as_dict()["slowest_first_audio"]
    assert isinstance(slowest, list) and [t["ttfa_ms"] for t in slowest] == [910.0, 420.0, 180.0]


# -- capacity over levels ----------------------------------------------------------------------


def test_capacity_is_the_largest_level_with_every_smaller_one_kept() -> None:
    levels = [_passing(1), _passing(2), _passing(4), _failing(8)]
    assert capacity(levels, GOAL) == 4
    assert capacity(list(reversed(levels)), GOAL) == 4  # by number of calls, not list order


def test_capacity_stops_at_the_first_failing_level() -> None:
    # 8 calls happened to pass, but 4 did not: the capacity is what every level up to it kept.
    assert capacity([_passing(1), _passing(2), _failing(4), _passing(8)], GOAL) == 2


def test_no_capacity_when_the_smallest_level_fails() -> None:
    assert capacity([_failing(1), _passing(2)], GOAL) is None
    assert capacity([], GOAL) is None


def test_report_capacities_use_the_options_service_level() -> None:
    options = CallsOptions(levels=(1, 2), service=ServiceLevel(ttfa_p95_ms=1000.0))
    report = CallsReport("http://127.0.0.1:8000", None, options, 10, (_passing(1), _failing(2)))
    assert report.capacity == 2  # 950 ms is within this report's 1000 ms
    assert report.peer_capacity is None
    assert report.as_dict()["capacity"] == 2


# -- gaps in an LLM pause ------------------------------------------------------------------------


def test_without_a_pause_every_gap_is_the_server_s() -> None:
    spans = [(1.0, 1.2), (3.0, 3.1)]
    assert split_gaps(spans, None) == (((1.0, 1.2), (3.0, 3.1)), ())
    assert split_gaps([], None) == ((), ())


def test_a_gap_overlapping_the_pause_is_starved() -> None:
    pause = (2.0, 2.8)
    before, inside, straddling_start, straddling_end, after = (
        (1.0, 1.5),
        (2.2, 2.5),
        (1.9, 2.1),
        (2.7, 3.0),
        (3.5, 3.6),
    )
    spans = [before, straddling_start, inside, straddling_end, after]
    ours, starved = split_gaps(spans, pause)
    assert ours == (before, after)
    assert starved == (straddling_start, inside, straddling_end)


def test_a_gap_touching_the_pause_window_is_the_server_s() -> None:
    # Ending as the pause begins or starting as its window closes: no silence inside it.
    ours, starved = split_gaps([(1.5, 2.0), (2.8, 3.0)], (2.0, 2.8))
    assert (ours, starved) == (((1.5, 2.0), (2.8, 3.0)), ())


def test_a_gap_spanning_the_whole_pause_is_starved() -> None:
    assert split_gaps([(1.0, 4.0)], (2.0, 2.8)) == ((), ((1.0, 4.0),))


# -- report and plot ---------------------------------------------------------------------------


def _report(peer: bool) -> CallsReport:
    options = CallsOptions(levels=(1, 2, 4), seconds=30.0, protocols=("native", "deepgram"))
    voxflow = (
        _passing(1),
        _level([_turn(reply="okay-refund", protocol="deepgram", gap_ms=10.0, heard_ms=9000.0)], 2),
        _failing(4),
    )
    peer_levels = (_failing(1), _failing(2), _level([_turn("refused")], 4)) if peer else ()
    return CallsReport(
        "http://127.0.0.1:8000",
        "tcp://127.0.0.1:10200" if peer else None,
        options,
        59,
        voxflow,
        peer_levels,
    )


def test_the_report_names_the_capacity_and_the_worst_gaps() -> None:
    text = format_calls(_report(peer=False))
    lines = text.splitlines()
    assert lines[0] == "voxflow calls bench: http://127.0.0.1:8000"
    assert "protocols native, deepgram" in text
    assert "  capacity: 2 calls" in lines
    assert "peer" not in lines
    rows = [line.split() for line in lines if line.strip().split(" ")[0] in ("1", "2", "4")]
    assert [(row[0], row[-1]) for row in rows] == [("1", "yes"), ("2", "yes"), ("4", "no")]
    assert "longest voxflow gaps: okay-refund (deepgram, 10 ms at 2 calls)" in text
    slowest = next(line for line in lines if line.startswith("slowest voxflow first audio: "))
    assert "(deepgram, " in slowest and " ms at 2 calls)" in slowest


def test_the_table_shows_cpu_per_heard_second() -> None:
    text = format_calls(_report(peer=False))
    header = next(line for line in text.splitlines() if line.strip().startswith("calls  turns"))
    assert "CPU s/heard s" in header and "CPU s/audio s" not in header
    # Level 2: 2.0 CPU s for its one turn's 9 s heard (4 s received would give 0.500).
    row = next(line.split() for line in text.splitlines() if line.strip().startswith("2 "))
    assert "0.222" in row
    # No level has a breakdown, so no section for it.
    assert "where the CPU goes" not in text


def test_the_report_shows_the_peer_and_its_capacity() -> None:
    text = format_calls(_report(peer=True))
    assert "; peer at tcp://127.0.0.1:10200" in text.splitlines()[0]
    lines = text.splitlines()
    assert lines.count("peer") == 1
    capacities = [line for line in lines if line.startswith("  capacity:")]
    assert capacities == ["  capacity: 2 calls", "  capacity: - calls"]


def _circles(svg: minidom.Element) -> int:
    return len(svg.getElementsByTagName("circle"))


def _texts(svg: minidom.Element) -> list[str]:
    return [
        "".join(child.data for child in node.childNodes)
        for node in svg.getElementsByTagName("text")
    ]


@pytest.mark.parametrize("peer", [False, True])
def test_the_plot_is_two_well_formed_charts(peer: bool) -> None:
    document = minidom.parseString(calls_plot(_report(peer)))
    root = document.documentElement
    assert root.tagName == "svg"
    charts = [node for node in root.childNodes if getattr(node, "tagName", None) == "svg"]
    assert len(charts) == 2
    titles = [_texts(chart)[0] for chart in charts]
    assert titles == ["First audio from the first token, p95", "Gap time per audio time"]
    legends = 2 if peer else 1
    # A point per level with a figure and a legend mark per series: the peer's all-refused
    # level has no TTFA to plot, but its gap share (0) is a point.
    ttfa_points = 3 + (2 if peer else 0)
    gap_points = 3 + (3 if peer else 0)
    assert _circles(charts[0]) == ttfa_points + legends
    assert _circles(charts[1]) == gap_points + legends
    labels = set(_texts(root))
    assert "voxflow" in labels
    assert ("wyoming-piper" in labels) == peer


def test_a_quiet_gap_counts_as_a_gapped_turn_and_breaks_the_service_level() -> None:
    quiet = TurnResult(
        "cartesia",
        "booking",
        "ok",
        ttfa_ms=100.0,
        audio_ms=9000.0,
        heard_ms=9000.0,
        quiet_gaps=1,
        longest_quiet_ms=5200.0,
    )
    level = _level([_turn(), quiet])
    assert level.turns_with_gap == 1 and level.gap_share == 0.0  # its listener never ran dry
    assert level.quiet_gaps == 1 and level.longest_quiet_ms == 5200.0
    assert not level.within(GOAL)
    assert level.within(ServiceLevel(quiet_gaps=1))
    assert level.as_dict()["quiet_gaps"] == 1
    assert "quiet gaps" in format_calls(_report(peer=False))
    assert level.as_dict()["quiet_turns"] == [
        {"reply": "booking", "protocol": "cartesia", "quiet_ms": 5200.0}
    ]


class _ReplayLine:
    """A line whose server answers with events at given moments, already past: ``run_turn``
    reads them as they would have come, without waiting for them."""

    protocol = "native"

    def __init__(self, events: list[tuple[float, float | None]]) -> None:
        """``events``: (seconds before now, audio ms; None: the turn's end)."""
        self._events = events
        self._queue: asyncio.Queue[LineEvent] = asyncio.Queue()

    async def begin(self, turn: str) -> tuple[float, asyncio.Queue[LineEvent]]:
        return time.monotonic(), self._queue

    async def send(self, turn: str, text: str) -> float:
        return time.monotonic()

    async def end(self, turn: str) -> float:
        now = time.monotonic()
        for ago, ms in self._events:
            self._queue.put_nowait(Finished(now - ago) if ms is None else Audio(now - ago, ms))
        return now

    async def barge(self, turn: str, played_ms: float, ended: bool = False) -> float:
        return time.monotonic()

    async def close(self) -> None:
        return None


def _plan(pause_after: int = -1) -> TurnPlan:
    tokens = tuple(TokenAt(0.0, t) for t in ("Sure.", " Next.", " Done."))
    return TurnPlan(Reply("r", "c", "Sure. Next. Done."), tokens, None, 1.0, 0.0, pause_after)


def test_a_turn_whose_audio_stops_coming_past_the_bound_has_a_quiet_gap() -> None:
    # 20 s of audio in hand when the server goes quiet for 4 s: no underrun, but a framework
    # would have ended the context.
    line = _ReplayLine([(30.0, 100.0), (29.9, 20000.0), (25.9, 500.0), (25.8, None)])
    result = asyncio.run(run_turn(line, "t", _plan()))  # type: ignore[arg-type]
    assert result.outcome == "ok" and result.gaps == 0
    assert result.quiet_gaps == 1 and result.longest_quiet_ms == pytest.approx(4000.0, abs=1.0)


def test_a_turn_sent_on_time_has_no_quiet_gap() -> None:
    line = _ReplayLine([(30.0, 100.0), (29.9, 20000.0), (29.0, 500.0), (28.9, None)])
    result = asyncio.run(run_turn(line, "t", _plan()))  # type: ignore[arg-type]
    assert result.quiet_gaps == 0 and result.longest_quiet_ms == pytest.approx(900.0, abs=1.0)
