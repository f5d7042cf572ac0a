"""``voxflow bench`` against a real server with tiny options, and its pure helpers."""

from __future__ import annotations

import asyncio
import io
import json
import random

import numpy as np
import pytest

from voxflow.bench.progress import ProgressLine
from voxflow.bench.server import (
    LONG,
    LONG_TEXT,
    SHORT,
    BenchOptions,
    BenchReport,
    Distribution,
    format_report,
    percentile,
    run_server_bench,
    token_for_char,
    tokenize,
)

# Long enough that a cancel after 300 ms of audio lands while synthesis still runs, short enough
# (~14 s of audio) that the server never has to hold back and a concurrency round ends quickly.
MEDIUM = (
    f"{LONG} The conductor smiles, lifts her baton, and the first notes rise into the warm night "
    "air above the square, where children stop their games to listen."
)


@pytest.fixture(scope="module")
def bench(server_url: str) -> tuple[BenchReport, str]:
    options = BenchOptions(
        repeats=2, concurrency=(1, 2), concurrency_rounds=1, long_text=MEDIUM, cancel_grace_ms=200
    )
    progress = io.StringIO()
    report = asyncio.run(run_server_bench(server_url, options, progress))
    return report, progress.getvalue()


def _distributions(report: BenchReport) -> list[Distribution]:
    found: list[Distribution] = []
    for r in report.full_text:
        found += [r.client_ttfa_ms, r.server_ttfa_ms, r.rtf, r.chunk_gap_ms, r.audio_ms]
    s, c = report.streamed, report.cancel
    found += [s.first_segment_chars, s.after_segment_ms, s.after_first_token_ms]
    found += [c.played_ms, c.client_latency_ms, c.server_latency_ms]
    for level in report.concurrency:
        found += [level.ttfa_ms, level.server_ttfa_ms, level.rtf]
    return found


def test_report_structure(bench: tuple[BenchReport, str]) -> None:
    report, _ = bench
    assert [(r.name, r.chars, r.runs, r.errors) for r in report.full_text] == [
        ("short", len(SHORT), 2, 0),
        ("long", len(LONG), 2, 0),
    ]
    assert (report.streamed.runs, report.streamed.errors) == (2, 0)
    assert report.streamed.tokens == len(LONG.split())
    assert (report.cancel.runs, report.cancel.errors) == (2, 0)
    assert [(r.connections, r.contexts, r.errors) for r in report.concurrency] == [
        (1, 1, 0),
        (2, 2, 0),
    ]
    for r in report.full_text:
        assert r.client_ttfa_ms.count == r.server_ttfa_ms.count == r.runs
    for level in report.concurrency:
        assert level.ttfa_ms.count == level.contexts
        assert level.underruns >= 0 and level.underrun_ms >= 0
        assert level.max_deadline_misses >= 0
    assert report.wall_s > 0


def test_latencies_are_positive_and_percentiles_ordered(bench: tuple[BenchReport, str]) -> None:
    report, _ = bench
    for r in report.full_text:
        assert r.client_ttfa_ms.p50 is not None and r.client_ttfa_ms.p50 > 0
        assert r.server_ttfa_ms.p50 is not None and r.server_ttfa_ms.p50 > 0
        assert r.rtf.p50 is not None and r.rtf.p50 > 0
    for level in report.concurrency:
        assert level.ttfa_ms.p50 is not None and level.ttfa_ms.p50 > 0
    for d in _distributions(report):
        if d.count:
            assert d.p50 is not None and d.p95 is not None and d.p99 is not None
            assert d.max is not None and d.mean is not None
            assert d.p50 <= d.p95 <= d.p99 <= d.max


def test_streamed_tokens_measure_from_the_segment_end(bench: tuple[BenchReport, str]) -> None:
    s = bench[0].streamed
    assert s.after_segment_ms.count == s.runs
    assert s.first_segment_chars.p50 is not None and 0 < s.first_segment_chars.p50 <= len(LONG)
    assert s.after_segment_ms.p50 is not None and s.after_segment_ms.p50 > 0
    # The first token went out no later than the one completing the segment, run by run.
    assert s.after_first_token_ms.p50 is not None
    assert s.after_first_token_ms.p50 >= s.after_segment_ms.p50


def test_cancel_leaves_no_audio_after_cancelled(bench: tuple[BenchReport, str]) -> None:
    c = bench[0].cancel
    assert c.audio_after_cancelled == 0
    assert c.client_latency_ms.count + c.missed == c.runs
    assert c.client_latency_ms.count > 0
    assert c.client_latency_ms.p50 is not None and c.client_latency_ms.p50 > 0


def test_report_formats_and_serialises(bench: tuple[BenchReport, str]) -> None:
    report, progress = bench
    text = format_report(report)
    for heading in ("1. TTFA, full text", "2. Streamed tokens", "3. Cancel", "4. Concurrency"):
        assert heading in text
    assert "short" in text and "long" in text
    data = json.loads(json.dumps(report.as_dict()))
    assert set(data) >= {"full_text", "streamed", "cancel", "concurrency", "options", "wall_s"}
    assert data["cancel"]["audio_after_cancelled"] == 0
    assert len(data["concurrency"]) == 2
    # One progress step per timed run, ending full.
    steps = report.options.steps
    assert "\r" in progress
    assert f"{steps}/{steps}" in progress
    assert progress.endswith("\n")


# -- pure parts ----------------------------------------------------------------------------------


def test_percentile_matches_numpy() -> None:
    rng = random.Random(7)
    for size in (1, 2, 5, 40):
        values = [rng.uniform(0, 100) for _ in range(size)]
        for q in (0, 50, 95, 99, 100):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_distribution_of_nothing_is_empty() -> None:
    empty = Distribution.of([])
    assert empty.count == 0 and empty.p50 is None
    assert Distribution.of([3.0, 1.0, 2.0]).p50 == 2.0
    assert empty.as_dict()["p99"] is None


@pytest.mark.parametrize("text", [LONG, SHORT, LONG_TEXT, "  leading, and  double  spaces \n"])
def test_tokens_cover_the_text(text: str) -> None:
    tokens = tokenize(text)
    assert "".join(tokens) == text
    assert all(t.strip() and " " not in t.strip() for t in tokens)


def test_token_for_char_finds_the_carrier() -> None:
    tokens = tokenize("The quick brown fox")  # "The ", "quick ", "brown ", "fox"
    assert [token_for_char(tokens, c) for c in (0, 3, 4, 9, 10, 18)] == [0, 0, 1, 1, 2, 3]
    with pytest.raises(ValueError):
        token_for_char(tokens, 19)


def test_options_are_validated() -> None:
    for bad in (
        {"repeats": 0},
        {"token_rate": 0},
        {"concurrency": (0,)},
        {"concurrency_rounds": 0},
        {"texts": ()},
        {"long_text": "  "},
        {"playout_buffer_ms": -1},
    ):
        with pytest.raises(ValueError):
            BenchOptions(**bad)  # type: ignore[arg-type]
    assert BenchOptions(repeats=3, concurrency=(1, 4), concurrency_rounds=2).steps == 2 * 3 + 6 + 4


def test_progress_line_redraws_in_place() -> None:
    out = io.StringIO()
    line = ProgressLine(out, total=4, width=8)
    line.advance("a long label")
    line.advance("b")
    frames = out.getvalue().split("\r")[1:]
    assert frames[0].startswith("[##------]    1/4 a long label")
    assert frames[1].startswith("[####----]    2/4 b")
    assert len(frames[1]) == len(frames[0])  # padded over the longer label
    line.advance("c", steps=10)
    assert line.done == 4
    line.finish()
    assert out.getvalue().endswith("\n")
    silent = ProgressLine(None, total=1)
    silent.advance("x")
    silent.finish()
    assert silent.done == 1
