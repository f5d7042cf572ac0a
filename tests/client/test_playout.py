"""PlayoutBuffer on synthetic timings: start buffer, real-time clock, underruns, barge-in."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxflow.client.playout import PlayoutBuffer


def test_waits_for_the_start_buffer_before_playing() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=150)
    buffer.add(0.0, 100)
    assert buffer.started_at is None
    assert buffer.played_ms(5.0) == 0.0
    assert buffer.buffered_ms(5.0) == 100.0
    buffer.add(6.0, 100)  # slow, but nothing was playing yet: not an underrun
    assert buffer.started_at == 6.0
    assert buffer.underruns == 0
    assert buffer.played_ms(6.0) == 0.0
    assert buffer.played_ms(6.05) == pytest.approx(50.0)
    assert buffer.played_ms(6.2) == pytest.approx(200.0)
    assert buffer.played_ms(100.0) == pytest.approx(200.0)  # never more than received


def test_zero_start_buffer_plays_from_the_first_chunk() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=0)
    buffer.add(1.0, 40)
    assert buffer.started_at == 1.0
    assert buffer.played_ms(1.02) == pytest.approx(20.0)


def test_chunks_in_time_keep_playback_gapless() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=150)
    # 200 ms chunks every 100 ms: the player is always ahead.
    for i in range(10):
        buffer.add(0.1 * i, 200)
    assert buffer.underruns == 0
    assert buffer.underrun_ms == 0.0
    assert buffer.started_at == 0.0
    assert buffer.finish_at == pytest.approx(2.0)
    assert buffer.played_ms(1.0) == pytest.approx(1000.0)
    assert buffer.buffered_ms(1.0) == pytest.approx(1000.0)


def test_a_late_chunk_is_one_underrun_and_shifts_the_schedule() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=150)
    buffer.add(0.0, 200)  # plays 0.0 .. 0.2
    buffer.add(0.5, 100)  # 300 ms of silence, then plays 0.5 .. 0.6
    assert buffer.underruns == 1
    assert buffer.underrun_ms == pytest.approx(300.0)
    assert buffer.played_ms(0.4) == pytest.approx(200.0)  # silence: the clock stands still
    assert buffer.played_ms(0.55) == pytest.approx(250.0)
    assert buffer.finish_at == pytest.approx(0.6)
    buffer.add(0.55, 100)  # arrives while the resumed audio plays: appended, no underrun
    assert buffer.underruns == 1
    assert buffer.finish_at == pytest.approx(0.7)
    assert buffer.played_ms(0.7) == pytest.approx(400.0)


def test_each_gap_counts_once() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=100)
    buffer.add(0.0, 100)  # ends 0.1
    buffer.add(0.3, 100)  # gap 200 ms, ends 0.4
    buffer.add(0.45, 100)  # gap 50 ms, ends 0.55
    buffer.add(0.5, 100)  # in time, ends 0.65
    assert buffer.underruns == 2
    assert buffer.underrun_ms == pytest.approx(250.0)
    stats = buffer.stats()
    assert (stats.underruns, stats.chunks) == (2, 4)
    assert stats.underrun_ms == pytest.approx(250.0)
    assert stats.received_ms == pytest.approx(400.0)


def test_each_underrun_is_a_span_of_silence() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=0)
    buffer.add(1.0, 100)  # plays 1.0 .. 1.1
    buffer.add(1.3, 50)  # silent 1.1 .. 1.3, plays 1.3 .. 1.35
    buffer.add(1.32, 100)  # in time: plays 1.35 .. 1.45
    buffer.add(2.0, 100)  # silent 1.45 .. 2.0
    spans = buffer.underrun_spans
    assert len(spans) == 2
    assert spans[0] == pytest.approx((1.1, 1.3))
    assert spans[1] == pytest.approx((1.45, 2.0))
    assert buffer.longest_underrun_ms == pytest.approx(550.0)
    assert buffer.stats().longest_underrun_ms == pytest.approx(550.0)
    assert buffer.stats().as_dict()["longest_underrun_ms"] == pytest.approx(550.0)


def test_no_underrun_no_spans() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=150)
    assert buffer.underrun_spans == ()
    assert buffer.longest_underrun_ms == 0.0
    buffer.add(0.0, 100)
    buffer.add(5.0, 100)  # slow, but before playback began: waiting to start is not silence
    buffer.add(5.1, 100)
    assert buffer.underrun_spans == ()
    assert buffer.longest_underrun_ms == 0.0


def test_the_longest_underrun_is_kept_when_shorter_ones_follow() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=0)
    buffer.add(0.0, 100)
    buffer.add(0.5, 100)  # 400 ms
    buffer.add(0.7, 100)  # 100 ms
    assert buffer.longest_underrun_ms == pytest.approx(400.0)
    assert [round(1000 * (end - start)) for start, end in buffer.underrun_spans] == [400, 100]


def test_underrun_spans_are_a_copy() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=0)
    buffer.add(0.0, 100)
    buffer.add(0.5, 100)
    before = buffer.underrun_spans
    buffer.add(1.0, 100)
    assert len(before) == 1 and len(buffer.underrun_spans) == 2


def test_a_chunk_landing_as_the_audio_runs_out_is_on_time() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=0)
    buffer.add(0.0, 250)
    buffer.add(0.25, 250)
    assert buffer.underruns == 0
    assert buffer.finish_at == pytest.approx(0.5)


def test_mark_end_starts_a_short_stream_and_later_audio_still_counts() -> None:
    buffer = PlayoutBuffer(start_buffer_ms=500)
    buffer.add(0.0, 100)
    buffer.mark_end(0.2)
    assert buffer.started_at == 0.2
    assert buffer.played_ms(0.25) == pytest.approx(50.0)
    buffer.add(1.0, 100)  # more text was flushed later: the player had run dry at 0.3
    assert buffer.underruns == 1
    assert buffer.underrun_ms == pytest.approx(700.0)
    assert buffer.played_ms(2.0) == pytest.approx(200.0)


def test_mark_end_without_audio_starts_nothing() -> None:
    buffer = PlayoutBuffer()
    buffer.mark_end(1.0)
    assert buffer.started_at is None
    assert buffer.finish_at is None
    buffer.add(2.0, 200)
    assert buffer.started_at == 2.0
    assert buffer.underruns == 0


def test_barge_in_reports_what_was_heard() -> None:
    # The client's view when it interrupts: 2 s received, playback started 150 ms in.
    buffer = PlayoutBuffer(start_buffer_ms=150)
    buffer.add(0.0, 100)
    buffer.add(0.05, 100)  # 200 ms in hand: playback starts at 0.05
    buffer.add(0.1, 1800)
    assert buffer.played_ms(0.55) == pytest.approx(500.0)
    assert buffer.buffered_ms(0.55) == pytest.approx(1500.0)


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        PlayoutBuffer(start_buffer_ms=-1)
    buffer = PlayoutBuffer()
    with pytest.raises(ValueError):
        buffer.add(0.0, -5)
    buffer.add(1.0, 10)
    with pytest.raises(ValueError, match="backwards"):
        buffer.add(0.5, 10)
    with pytest.raises(ValueError, match="backwards"):
        buffer.mark_end(0.9)


@settings(max_examples=200, deadline=None)
@given(
    start_ms=st.floats(0, 500),
    chunks=st.lists(
        st.tuples(st.floats(0, 0.5), st.floats(0, 400)),  # (time since previous, duration)
        min_size=1,
        max_size=30,
    ),
)
def test_schedule_invariants(start_ms: float, chunks: list[tuple[float, float]]) -> None:
    buffer = PlayoutBuffer(start_buffer_ms=start_ms)
    now = 0.0
    for gap, duration in chunks:
        now += gap
        buffer.add(now, duration)
    buffer.mark_end(now)
    total = sum(d for _, d in chunks)
    assert buffer.received_ms == pytest.approx(total)
    assert buffer.underrun_ms >= 0
    assert (buffer.underruns == 0) == (buffer.underrun_ms == 0)
    # The spans are the underruns: one each, in time order, summing to the silence.
    spans = buffer.underrun_spans
    assert len(spans) == buffer.underruns
    assert all(start < end for start, end in spans)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    silences = [1000 * (end - start) for start, end in spans]
    assert sum(silences) == pytest.approx(buffer.underrun_ms, abs=1e-6)
    assert buffer.longest_underrun_ms == pytest.approx(max(silences, default=0.0), abs=1e-6)
    started, finished = buffer.started_at, buffer.finish_at
    if total == 0:
        return
    assert started is not None and finished is not None
    # Wall time from start to end of playback is exactly the audio plus the silences.
    assert (finished - started) * 1000 == pytest.approx(total + buffer.underrun_ms, abs=1e-6)
    assert buffer.played_ms(finished) == pytest.approx(total)
    # The playback clock never runs backwards nor faster than real time.
    times = [started + (finished - started) * k / 20 for k in range(21)]
    played = [buffer.played_ms(t) for t in times]
    for (t0, p0), (t1, p1) in itertools.pairwise(zip(times, played, strict=True)):
        assert p0 <= p1 + 1e-9
        assert p1 - p0 <= (t1 - t0) * 1000 + 1e-6
        assert buffer.buffered_ms(t1) >= -1e-6
