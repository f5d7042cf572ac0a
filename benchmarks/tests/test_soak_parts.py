"""``voxflow soak``'s pure parts: the figures folded from outcomes, the median of rounds, the
resident size's slope, the report, the soak's texts, the bytes it writes and the metrics it
reads."""

from __future__ import annotations

from dataclasses import replace

import pytest
from websockets.frames import Frame
from websockets.streams import StreamReader

from voxflow_bench.corpus import Reply, load_corpus
from voxflow_bench.soak.clients import Outcome, _framed_audio
from voxflow_bench.soak.options import SoakOptions, short_texts
from voxflow_bench.soak.report import (
    RSS_TOLERANCE_MIB,
    CapacityLevel,
    CapacityResult,
    FaultResult,
    LoadResult,
    SoakReport,
    SoakResult,
    SoakSample,
    back_to_baseline,
    format_soak_report,
    goals,
)
from voxflow_bench.soak.stats import (
    Outcomes,
    least_squares_slope,
    median_or_none,
    rss_slope_per_1000,
    slope_standard_error,
)
from voxflow_bench.soak.wire import ServerStats, masked_frame, parse_metrics
from voxflow_bench.stats import Distribution


def _ok(ttfa: float, protocol: str = "native", underruns: int = 0) -> Outcome:
    return Outcome(protocol, "ok", ttfa_ms=ttfa, underruns=underruns, underrun_ms=10.0 * underruns)


def _refused(ms: float) -> Outcome:
    return Outcome("openai", "refused", refusal_ms=ms)


# -- statistics -----------------------------------------------------------------------------------


def test_the_slope_of_points_on_a_line_is_its_slope() -> None:
    assert least_squares_slope([(0, 1.0), (1, 3.0), (2, 5.0), (3, 7.0)]) == pytest.approx(2.0)
    assert least_squares_slope([(0, 1.0), (1, 2.0), (2, 1.0), (3, 2.0)]) == pytest.approx(0.2)
    assert least_squares_slope([(1, 5.0)]) is None
    assert least_squares_slope([(1, 5.0), (1, 6.0)]) is None  # no spread in x


def test_the_slope_comes_with_the_standard_error_of_its_noise() -> None:
    assert slope_standard_error([(0, 1.0), (1, 3.0), (2, 5.0)]) == pytest.approx(0.0)
    noisy = [(0, 0.0), (1, 1.0), (2, 0.0), (3, 1.0)]
    assert slope_standard_error(noisy) == pytest.approx((0.8 / 2 / 5) ** 0.5)
    assert slope_standard_error([(0, 0.0), (1, 1.0)]) is None  # two points fit any line


def test_the_rss_slope_leaves_out_the_warm_up_and_is_per_thousand_requests() -> None:
    # Caches fill during the first 1,000 requests (+100 MiB), then 0.5 MiB per 1,000.
    samples = [(0, 300.0), (1000, 400.0), (2000, 400.5), (3000, 401.0), (4000, 401.5)]
    assert rss_slope_per_1000(samples, warmup=1000) == pytest.approx(0.5)
    assert rss_slope_per_1000(samples, warmup=0) > 10  # the warm-up would look like a leak
    assert rss_slope_per_1000(samples[:2], warmup=1000) is None


def test_median_ignores_missing_figures() -> None:
    assert median_or_none([3.0, None, 1.0, 2.0]) == 2.0
    assert median_or_none([None, None]) is None


def test_outcomes_split_admitted_refused_and_errors_by_kind() -> None:
    runs = [
        _ok(50.0),
        _ok(70.0, "openai", underruns=2),
        _refused(2.0),
        _refused(4.0),
        Outcome("native", "cancelled", ttfa_ms=40.0),
        Outcome("native", "vanished"),
        Outcome("openai", "http 500"),
        Outcome("openai", "timeout"),
        Outcome("openai", "timeout"),
    ]
    summary = Outcomes.of(runs)
    assert (summary.total, summary.admitted, summary.refused) == (9, 2, 2)
    assert summary.ttfa_ms.count == 2 and summary.ttfa_ms.max == 70.0
    assert summary.refusal_ms.max == 4.0
    assert (summary.underruns, summary.streams_with_underruns) == (2, 1)
    assert summary.errors == (("timeout", 2), ("http 500", 1))
    assert summary.error_count == 3
    assert [name for name, _ in summary.ttfa_by_protocol] == ["native", "openai"]


# -- capacity -------------------------------------------------------------------------------------


def _round(p95_like: float, underruns: int = 0) -> Outcomes:
    return Outcomes.of([_ok(p95_like, underruns=underruns)])


def test_a_capacity_level_passes_on_the_median_of_its_rounds() -> None:
    # Unloaded p95 100 ms, goal 1.5 x: the median round must be at or under 150 ms, no underrun.
    one_bad = CapacityLevel(4, (_round(120), _round(400, 3), _round(140)), 100.0, 1.5)
    assert one_bad.ttfa_p95_ms == 140.0 and one_bad.underruns == 0 and one_bad.passed
    two_slow = CapacityLevel(6, (_round(160), _round(120), _round(170)), 100.0, 1.5)
    assert not two_slow.passed
    two_underrun = CapacityLevel(8, (_round(100, 1), _round(100, 2), _round(100)), 100.0, 1.5)
    assert two_underrun.underruns == 1 and not two_underrun.passed
    refused = Outcomes.of([_ok(100), _refused(3.0)])
    assert not CapacityLevel(8, (refused,) * 3, 100.0, 1.5).passed  # a lighter level than it says
    assert not CapacityLevel(2, (_round(10),), None, 1.5).passed  # no baseline: cannot pass

    result = CapacityResult(100.0, 2, 1000, (one_bad, two_slow))
    assert result.largest == 4 and result.per_worker == 2.0
    assert CapacityResult(100.0, 2, 1000, (two_slow,)).per_worker is None


# -- the report -----------------------------------------------------------------------------------


def _stats(rss: float) -> ServerStats:
    return ServerStats(rss_mib=rss, open_fds=30, threads=15, tasks=6, admitted_streams=0, at=0.0)


def _report() -> SoakReport:
    unloaded = Outcomes.of([_ok(50.0), _ok(60.0, "openai")])
    loaded = Outcomes.of([_ok(70.0), _ok(80.0, "openai"), _refused(3.0), _refused(60.0)])
    load = LoadResult(12, 24, 60.0, unloaded, loaded, 1.5)
    level = CapacityLevel(4, (_round(70),) * 3, 59.5, 1.5)
    capacity = CapacityResult(59.5, 2, 1000, (level,))
    fault = FaultResult(
        "500 idle sockets",
        "500 silent sockets: 500 closed by the server",
        12.0,
        Distribution.of([1.0, 2.0, 30.0]),
        0,
        _stats(400.0),
        _stats(401.0),
        Outcomes.of([_ok(55.0)]),
    )
    samples = tuple(SoakSample(n, 400.0 + n / 10_000, 30, 15, 6) for n in range(0, 4001, 1000))
    soak = SoakResult(
        4000,
        8,
        100.0,
        1000,
        samples,
        Outcomes.of([_ok(50.0), Outcome("native", "cut body")]),
        (("native", Outcomes.of([_ok(50.0), Outcome("native", "cut body")])),),
    )
    return SoakReport("http://127.0.0.1:8000", "2 CPUs", 300.0, load, capacity, (fault,), soak)


def test_the_report_prints_every_figure_and_judges_each_goal() -> None:
    report = _report()
    text = format_soak_report(report)
    for expected in (
        "1. Load",
        "24 back-to-back clients (2 x the cap of 12)",
        "refused: to 429 / error",
        "admitted p95 / unloaded p95 = 1.34",
        "2. Capacity",
        "largest N that passed: 4; streams per worker = N / 2 workers = 2.0",
        "3. Faults",
        "500 idle sockets: 500 silent sockets",
        "RSS 400->401 MiB, fds 30->30, threads 15->15, loop tasks 6->6",
        "4. Soak: 4,000 mixed requests",
        "RSS slope after the first 1,000: 0.10 MiB per 1,000 requests",
        "errors (not ok, refused, cancelled or vanished): cut body 1",
    ):
        assert expected in text, expected
    verdicts = {goal: verdict for goal, _, verdict in goals(report)}
    assert verdicts["admitted TTFA p95 / unloaded p95 <= 1.5"] == "met"
    assert verdicts["refusal latency max <= 50 ms"] == "MISSED"  # one took 60 ms
    assert verdicts["RSS slope < 1 MiB per 1,000 requests"] == "met"
    assert verdicts["500 idle sockets: /healthz within 100 ms"] == "met"  # max 30 ms
    assert verdicts["500 idle sockets: back to baseline"] == "met"
    assert verdicts["soak: no errors but intended refusals"] == "MISSED"
    assert report.as_dict()["goals"]  # JSON-ready, goals included


def test_back_to_baseline_means_no_more_fds_threads_or_tasks_and_rss_within_tolerance() -> None:
    base = _stats(400.0)
    assert back_to_baseline(base, _stats(410.0))
    assert not back_to_baseline(base, _stats(400.0 + RSS_TOLERANCE_MIB + 1))
    assert not back_to_baseline(base, replace(base, open_fds=31))
    assert not back_to_baseline(base, replace(base, threads=16))
    assert not back_to_baseline(base, replace(base, tasks=7))
    assert not back_to_baseline(base, replace(base, tasks=None))  # unknown is not met
    assert back_to_baseline(base, replace(base, open_fds=29, tasks=5))


def test_a_report_of_no_section_is_just_its_heading() -> None:
    text = format_soak_report(SoakReport("http://x:1", "2 CPUs", 0.0))
    assert text.startswith("voxflow soak: http://x:1") and "Goals" not in text


# -- options, texts, bytes ------------------------------------------------------------------------


def test_soak_texts_are_short_sentences_from_the_corpus() -> None:
    texts = short_texts(load_corpus(), 16)
    assert len(texts) > 20 and len(set(texts)) == len(texts)
    for text in texts:
        assert text.endswith((".", "?", "!")) and not text.endswith((",.", ":."))
        assert len(text) <= 17 or " " not in text, text  # a lone long word stays whole
    assert short_texts((Reply("a", "c", "Hello, world, and more"),), 13) == ("Hello, world.",)


def test_options_refuse_what_cannot_run() -> None:
    replies = (Reply("a", "c", "Hello."),)
    with pytest.raises(ValueError, match="sections"):
        SoakOptions(replies=replies, sections=("nope",))
    with pytest.raises(ValueError, match="protocols"):
        SoakOptions(replies=replies, protocols=("smoke-signals",))
    with pytest.raises(ValueError, match=">= 1"):
        SoakOptions(replies=replies, capacity_levels=(0,))
    options = SoakOptions(replies=replies)
    assert options.reply(3, 1).text == "Hello." and options.as_dict()["replies"] == 1


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536])
def test_a_client_frame_is_masked_text_that_a_websocket_server_reads(size: int) -> None:
    text = "é" * (size // 2) + "a" * (size % 2)
    reader = StreamReader()
    reader.feed_data(masked_frame(text))
    parser = Frame.parse(reader.read_exact, mask=True)
    try:
        next(parser)
    except StopIteration as done:
        frame = done.value
    else:
        pytest.fail("the frame was not whole")
    assert frame.fin and frame.data.decode() == text


def test_metrics_give_the_server_figures() -> None:
    text = (
        "process_resident_memory_bytes 4.194304e+08\nprocess_open_fds 31.0\n"
        'voxflow_threads{kind="os"} 17.0\nvoxflow_threads{kind="python"} 5.0\n'
        "voxflow_admitted_streams 2.0\nvoxflow_event_loop_tasks 9.0\n"
    )
    stats = parse_metrics(text)
    figures = (stats.rss_mib, stats.open_fds, stats.threads, stats.tasks, stats.admitted_streams)
    assert figures == (400.0, 31, 17, 9, 2)
    assert parse_metrics(text.replace("voxflow_threads", "other")).threads is None
    assert parse_metrics(text.replace("9.0", "NaN")).tasks is None
    with pytest.raises(ValueError):
        parse_metrics("voxflow_admitted_streams 2.0\n")
    # What the phrase cache holds on purpose is not counted as growth.
    cached = parse_metrics(text + "voxflow_cache_bytes 5.24288e+07\n")
    assert (cached.rss_mib, cached.cache_mib) == (350.0, 50.0)


def test_sse_events_and_json_lines_give_their_audio_and_say_when_they_ended() -> None:
    sse = b'data: {"type":"speech.audio.delta","audio":"AAAB"}\n\ndata: {"type":"spe'
    audio, rest, ended = _framed_audio("sse", sse)
    assert (audio, rest, ended) == (b"\x00\x00\x01", b'data: {"type":"spe', False)
    done = rest + b'ech.audio.done","usage":{}}\n\n'
    assert _framed_audio("sse", done) == (b"", b"", True)
    lines = b'{"audio_base64":"AAAB","alignment":null}\n'
    assert _framed_audio("lines", lines) == (b"\x00\x00\x01", b"", True)
