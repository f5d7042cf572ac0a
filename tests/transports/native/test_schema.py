"""``voxflow.transports.native.schema``: what the server writes (``encode_event``), the client
reads back (``parse_event``), field for field, for every event kind; what does not fit the
schema is refused."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voxflow.client.messages import (
    AudioEvent,
    CancelledEvent,
    DoneEvent,
    DoneMetrics,
    ErrorEvent,
    TimestampsEvent,
    WordTimestamp,
    parse_event,
)
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    ContextMetrics,
    DoneOut,
    ErrorOut,
    TimestampsOut,
    WordTiming,
)
from voxflow.transports.native import schema
from voxflow.transports.native.protocol import encode_event

AT = 12.5  # the client's arrival stamp
times = st.floats(min_value=0, max_value=1e7, allow_nan=False)
texts = st.text(max_size=20)


def _round_trip(event: object) -> object:
    frame, extra = encode_event(event, binary=False)  # type: ignore[arg-type]
    assert extra is None
    return parse_event(frame, AT)


@given(
    seq=st.integers(0, 10**6),
    offset=times,
    duration=times,
    data=st.binary(max_size=64),
    text_end=st.none() | st.integers(0, 10**6),
)
def test_audio_comes_back_with_its_bytes_and_times(
    seq: int, offset: float, duration: float, data: bytes, text_end: int | None
) -> None:
    parsed = _round_trip(AudioOut("c1", seq, offset, duration, data, text_end))
    assert parsed == AudioEvent("c1", seq, round(offset, 3), round(duration, 3), data, AT)


@given(words=st.lists(st.tuples(texts, times, times, st.integers(0, 999)), max_size=5))
def test_timestamps_come_back_word_for_word(
    words: list[tuple[str, float, float, int]],
) -> None:
    timings = tuple(WordTiming(w, s, e, c, c + len(w)) for w, s, e, c in words)
    parsed = _round_trip(TimestampsOut("c1", timings))
    expected = tuple(
        WordTimestamp(t.word, round(t.start_ms, 1), round(t.end_ms, 1), t.char_start, t.char_end)
        for t in timings
    )
    assert parsed == TimestampsEvent("c1", expected, AT)


@pytest.mark.parametrize("cached", [True, False, None])
@pytest.mark.parametrize("ttfa", [None, 81.237])
def test_done_comes_back_with_every_metric(ttfa: float | None, cached: bool | None) -> None:
    metrics = ContextMetrics(ttfa, 1234.567, 89.012, None if ttfa is None else 0.07213, 7, 1)
    parsed = _round_trip(DoneOut("c1", metrics if cached is None else _cached(metrics, cached)))
    rounded = None if ttfa is None else round(ttfa, 2)
    rtf = None if ttfa is None else 0.0721
    assert parsed == DoneEvent("c1", DoneMetrics(rounded, 1234.57, 89.01, rtf, 7, 1, cached), AT)


def _cached(metrics: ContextMetrics, cached: bool) -> ContextMetrics:
    return ContextMetrics(**{**metrics.__dict__, "first_cached": cached})


@given(text=texts, played=times, latency=times)
def test_cancelled_comes_back_with_what_was_heard(text: str, played: float, latency: float) -> None:
    parsed = _round_trip(CancelledOut("c1", text, played, latency, requested_at=0.0))
    assert parsed == CancelledEvent("c1", text, round(played, 2), round(latency, 3), AT)


@pytest.mark.parametrize("context_id", ["c1", None])
def test_errors_come_back_with_their_code_and_the_retry_hint_on_the_wire(
    context_id: str | None,
) -> None:
    event = ErrorOut(context_id, "concurrency_limited", "full", True, retry_after_ms=999.6)
    frame, _ = encode_event(event, binary=False)
    assert json.loads(frame)["retry_after_ms"] == 1000
    assert parse_event(frame, AT) == ErrorEvent(context_id, "concurrency_limited", "full", True, AT)


def test_binary_mode_sends_the_length_and_the_audio_after_the_header() -> None:
    frame, extra = encode_event(AudioOut("c1", 0, 0.0, 10.0, b"\x01\x02\x03"), binary=True)
    header = json.loads(frame)
    assert extra == b"\x01\x02\x03" and header["bytes"] == 3 and "audio" not in header
    assert schema.AUDIO.decode(header)["seq"] == 0


@pytest.mark.parametrize(
    ("frame", "complaint"),
    [
        (
            '{"type":"audio","context_id":"c","seq":"1","offset_ms":0,"duration_ms":1,"audio":""}',
            "seq",
        ),
        (
            '{"type":"audio","context_id":"c","seq":1,"offset_ms":0,"duration_ms":1,"audio":"@@"}',
            "base64",
        ),
        ('{"type":"timestamps","context_id":"c","words":[{"word":"a"}]}', "start_ms"),
        ('{"type":"done","context_id":"c","metrics":[]}', "metrics"),
        (
            '{"type":"cancelled","context_id":"c","spoken_text":"x","played_ms":true,'
            '"latency_ms":0}',
            "played_ms",
        ),
        (
            '{"type":"error","context_id":7,"code":"x","message":"m","retryable":false}',
            "context_id",
        ),
        ('{"type":"poem","context_id":"c"}', "unknown message type"),
    ],
)
def test_what_does_not_fit_the_schema_is_refused(frame: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_event(frame, AT)


def test_every_event_kind_has_one_message() -> None:
    assert set(schema.MESSAGES) == {"audio", "timestamps", "done", "cancelled", "error"}
