"""The Cartesia WebSocket protocol without I/O: requests in, session calls out; session events in,
Cartesia's JSON out."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest

from tests.support.instant_runtime import InstantRuntime
from tests.support.protocols import new_session, protocol_context
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.wire import Reply
from voxflow.session.admission import Admission, AdmissionSettings
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    CancelStream,
    CloseOut,
    ContextMetrics,
    DoneOut,
    ErrorOut,
    Output,
    SubmitSegment,
    TimestampsOut,
    WordTiming,
)
from voxflow.session.session import Session
from voxflow.transports.cartesia.protocol import CONTEXT_IDLE_S, INACTIVITY_S, CartesiaProtocol
from voxflow.transports.cartesia.words import FlushIds, WordCursor

METRICS = ContextMetrics(
    ttfa_ms=1.0, audio_ms=10.0, synth_ms=1.0, rtf=0.1, chunks=1, deadline_misses=0
)
S16 = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000}
VOICE = {"mode": "id", "id": "a0e99841-438c-4a64-b679-ae501e7d6091"}


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return protocol_context()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def pair(context: ProtocolContext, clock: Clock) -> tuple[Session, CartesiaProtocol]:
    session = new_session()
    return session, CartesiaProtocol(session, clock, context)


def _request(protocol: CartesiaProtocol, **fields: Any) -> None:
    message = {"context_id": "c", "voice": VOICE, "output_format": S16, **fields}
    protocol.receive(json.dumps(message))


def _frames(reply: Reply[str]) -> list[dict[str, Any]]:
    frames = [json.loads(f, parse_constant=pytest.fail) for f in reply.frames]
    assert all(isinstance(f, dict) and "context_id" in f for f in frames)
    return frames


def _errors(outputs: list[Output]) -> list[ErrorOut]:
    return [o for o in outputs if isinstance(o, ErrorOut)]


def _timing(word: str, start: int, start_ms: float, end_ms: float) -> WordTiming:
    return WordTiming(word, start_ms, end_ms, start, start + len(word))


# -- words and flush ids --------------------------------------------------------------------------


def test_words_carry_their_punctuation_and_never_overlap() -> None:
    text = '"Hello," she said -- "it\'s 3.50!" '
    cursor = WordCursor()
    timings = [
        _timing("Hello", 1, 0, 300),
        _timing("she", 9, 320, 500),
        _timing("said", 13, 500, 700),
        _timing("it's", 22, 800, 1000),
        _timing("3.50", 27, 1000, 1400),
    ]
    first = cursor.words(timings[:3], text)
    second = cursor.words(timings[3:], text)
    assert first.words == ('"Hello,"', "she", "said")
    # "--" stands alone between spaces: it belongs to no word.
    assert second.words == ("\"it's", '3.50!"')
    assert first.start == (0.0, 0.32, 0.5) and second.end == (1.0, 1.4)
    assert all(w in text for w in first.words + second.words)


def test_word_times_never_go_back() -> None:
    cursor = WordCursor()
    words = cursor.words([_timing("a", 0, 500, 600), _timing("b", 2, 400, 300)], "a b")
    assert words.start == (0.5, 0.5) and words.end == (0.6, 0.5)


def test_flush_groups_end_at_the_first_word_past_the_flush() -> None:
    flushes = FlushIds()
    flushes.flush(13)  # "Stay hungry, " | "stay foolish."
    flushes.flush(13)  # a second flush with nothing between: an empty group
    assert flushes.reached([_timing("hungry", 5, 0, 1)]) == []
    assert flushes.current == 1
    assert flushes.reached([_timing("stay", 13, 2, 3)]) == [1, 2]
    assert flushes.current == 3 and flushes.finish() == []
    flushes.flush(40)
    assert flushes.finish() == [3]


# -- requests -------------------------------------------------------------------------------------


def test_continue_false_ends_and_max_buffer_delay_zero_flushes_each_transcript(
    pair: tuple[Session, CartesiaProtocol],
) -> None:
    session, protocol = pair
    _request(protocol, transcript="Hello there", max_buffer_delay_ms=0, **{"continue": True})
    # No sentence end, and still synthesized at once: the client buffers by itself.
    assert any(isinstance(o, SubmitSegment) for o in session.drain())
    _request(protocol, transcript="", **{"continue": False})
    _request(protocol, transcript="", **{"continue": False})  # a second end is harmless
    assert not _errors(session.drain())
    _request(protocol, transcript="More.", **{"continue": True})
    (error,) = _errors(session.drain())
    assert error.code == "context_closing" and error.context_id == "c"


def test_managed_buffering_waits_for_more_text(pair: tuple[Session, CartesiaProtocol]) -> None:
    session, protocol = pair
    _request(protocol, transcript="Hello there", **{"continue": True})
    assert not any(isinstance(o, SubmitSegment) for o in session.drain())


def test_cancel_of_a_context_that_is_not_open_is_ignored(
    pair: tuple[Session, CartesiaProtocol],
) -> None:
    session, protocol = pair
    protocol.receive(json.dumps({"context_id": "never", "cancel": True}))
    assert session.drain() == []


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"voice": {"mode": "clone", "id": "x"}}, "invalid_message"),
        ({"voice": 12}, "invalid_message"),
        ({"output_format": None}, "invalid_message"),
        ({"output_format": {**S16, "sample_rate": 12345}}, "unsupported_format"),
        ({"output_format": {**S16, "sample_rate": True}}, "unsupported_format"),
        ({"output_format": {**S16, "encoding": "pcm_s24le"}}, "unsupported_format"),
        ({"output_format": {**S16, "container": "wav"}}, "unsupported_format"),
        ({"max_buffer_delay_ms": -1}, "invalid_message"),
        ({"max_buffer_delay_ms": True}, "invalid_message"),
        ({"generation_config": {"speed": 10**400}}, "invalid_voice_settings"),
        ({"generation_config": {"speed": 9.0}}, "invalid_voice_settings"),
        ({"generation_config": []}, "invalid_message"),
        ({"speed": "ludicrous"}, "invalid_voice_settings"),
        ({"voice": {**VOICE, "__experimental_controls": {"speed": 3}}}, "invalid_voice_settings"),
        ({"add_timestamps": "yes"}, "invalid_message"),
        ({"model_id": 3}, "invalid_message"),
        ({"transcript": ["Hi."]}, "invalid_message"),
    ],
)
def test_bad_fields_are_errors_of_their_context(
    pair: tuple[Session, CartesiaProtocol], fields: dict[str, Any], code: str
) -> None:
    session, protocol = pair
    _request(protocol, **{"transcript": "Hi.", **fields})
    outputs = session.drain()
    (error,) = _errors(outputs)
    assert (error.code, error.context_id) == (code, "c")
    assert session.open_contexts == 0
    (frame,) = _frames(protocol.reply(error))
    assert frame["type"] == "error" and frame["done"] is True and frame["status_code"] == 400
    assert len(frame["message"]) < 400


@pytest.mark.parametrize(
    "frame",
    [
        "nope",
        "[]",
        b"\x00",
        json.dumps({"context_id": "a\x00b"}),
        "1e400",
        '{"transcript": "\\ud800"}',
    ],
)
def test_frames_that_are_not_requests_are_errors_of_the_connection(
    pair: tuple[Session, CartesiaProtocol], frame: str | bytes
) -> None:
    session, protocol = pair
    protocol.receive(frame)
    (error,) = _errors(session.drain())
    assert error.context_id is None
    reply = protocol.reply(error)
    assert reply.close is None  # the connection goes on
    assert _frames(reply)[0]["context_id"] is None


def test_voices_ids_names_and_embeddings(
    pair: tuple[Session, CartesiaProtocol], context: ProtocolContext
) -> None:
    session, protocol = pair
    for cid, voice in [
        ("uuid", VOICE),
        ("string", "a0e99841-438c-4a64-b679-ae501e7d6091"),
        ("name", {"mode": "id", "id": context.default_voice}),
        ("embedding", {"mode": "embedding", "embedding": [0.1] * 192}),
        ("none", {"mode": "id", "id": None}),
    ]:
        _request(protocol, context_id=cid, voice=voice, transcript="Hi.")
    assert not _errors(session.drain()) and session.open_contexts == 5
    _request(protocol, context_id="typo", voice={"mode": "id", "id": "jeo"}, transcript="Hi.")
    (error,) = _errors(session.drain())
    assert error.code == "unknown_voice"


# -- events ---------------------------------------------------------------------------------------


def test_chunks_timestamps_flushes_and_done(
    pair: tuple[Session, CartesiaProtocol], clock: Clock
) -> None:
    session, protocol = pair
    _request(protocol, transcript="Stay hungry, ", add_timestamps=True, **{"continue": True})
    _request(protocol, transcript="", flush=True, **{"continue": True})
    _request(protocol, transcript="stay foolish.", **{"continue": False})
    assert not _errors(session.drain())
    first = TimestampsOut("c", (_timing("Stay", 0, 0, 200), _timing("hungry", 5, 200, 500)))
    (stamps,) = _frames(protocol.reply(first))
    assert stamps["type"] == "timestamps" and stamps["flush_id"] == 1
    assert stamps["word_timestamps"] == {
        "words": ["Stay", "hungry,"],
        "start": [0.0, 0.2],
        "end": [0.2, 0.5],
    }
    clock.now += 0.25
    (chunk,) = _frames(protocol.reply(AudioOut("c", 0, 0.0, 500.0, b"\x01\x00" * 10)))
    assert (chunk["type"], chunk["flush_id"], chunk["done"]) == ("chunk", 1, False)
    assert chunk["step_time"] == 250.0 and chunk["status_code"] == 206
    second = TimestampsOut("c", (_timing("stay", 13, 600, 800), _timing("foolish", 18, 800, 1200)))
    flush_done, stamps = _frames(protocol.reply(second))
    assert flush_done == {
        "type": "flush_done",
        "context_id": "c",
        "done": False,
        "status_code": 206,
        "flush_done": True,
        "flush_id": 1,
    }
    assert stamps["flush_id"] == 2 and stamps["word_timestamps"]["words"] == ["stay", "foolish."]
    assert _frames(protocol.reply(AudioOut("c", 1, 500.0, 700.0, b"\x02\x00")))[0]["flush_id"] == 2
    assert not protocol.reply(AudioOut("c", 2, 1200.0, 0.0, b"")).frames  # never an empty chunk
    (done,) = _frames(protocol.reply(DoneOut("c", METRICS)))
    assert done == {"type": "done", "context_id": "c", "done": True, "status_code": 206}
    # The id is free again, and nothing more of the old context is sent.
    assert not protocol.reply(AudioOut("c", 3, 0.0, 10.0, b"\x00\x00")).frames


def test_timestamps_only_when_asked(pair: tuple[Session, CartesiaProtocol]) -> None:
    session, protocol = pair
    _request(protocol, transcript="Hi.")
    session.drain()
    assert not protocol.reply(TimestampsOut("c", (_timing("Hi", 0, 0, 100),))).frames


def test_float_samples_are_converted_per_chunk(pair: tuple[Session, CartesiaProtocol]) -> None:
    session, protocol = pair
    _request(protocol, transcript="Hi.", output_format={**S16, "encoding": "pcm_f32le"})
    session.drain()
    pcm = np.array([0, 16384, -32768, 32767], dtype="<i2").tobytes()
    (chunk,) = _frames(protocol.reply(AudioOut("c", 0, 0.0, 1.0, pcm[:3])))  # ends mid-sample
    (rest,) = _frames(protocol.reply(AudioOut("c", 1, 0.0, 1.0, pcm[3:])))
    samples = np.frombuffer(
        base64.b64decode(chunk["data"]) + base64.b64decode(rest["data"]), dtype="<f4"
    )
    assert samples.tolist() == [0.0, 0.5, -1.0, 32767 / 32768]


def test_an_error_of_an_open_context_ends_it(pair: tuple[Session, CartesiaProtocol]) -> None:
    session, protocol = pair
    _request(protocol, transcript="Hi there.", **{"continue": True})
    session.drain()
    failed = ErrorOut("c", "synthesis_failed", "synthesis failed: boom", True)
    (frame,) = _frames(protocol.reply(failed))
    assert frame["error_code"] == "synthesis_failed" and frame["status_code"] == 500
    assert frame["error"] == "Generation failed: synthesis failed: boom"
    # The context is cancelled, and nothing of it goes out any more.
    outputs = session.drain()
    assert any(isinstance(o, CancelStream) for o in outputs) and session.open_contexts == 0
    cancelled = [o for o in outputs if isinstance(o, CancelledOut)]
    assert not protocol.reply(AudioOut("c", 0, 0.0, 10.0, b"\x00\x00")).frames
    assert not protocol.reply(cancelled[0]).frames
    # A stop that crossed the context's end (the session has forgotten it) says nothing.
    assert not protocol.reply(ErrorOut("c", "unknown_context", "no open context 'c'")).frames


def test_a_stale_refusal_does_not_stop_a_reopened_context(
    pair: tuple[Session, CartesiaProtocol],
) -> None:
    session, protocol = pair
    _request(protocol, transcript="Hi.", voice="nobody")  # refused by the session's voice check
    _request(protocol, transcript="Hi.", **{"continue": True})  # the same id, opened this time
    (refusal,) = _errors(session.drain())
    assert _frames(protocol.reply(refusal))[0]["error_code"] == "voice_not_found"
    assert session.open_contexts == 1 and not session.drain()  # nothing was cancelled
    assert _frames(protocol.reply(AudioOut("c", 0, 0.0, 10.0, b"\x00\x00")))[0]["type"] == "chunk"


def test_encoding_failure_is_the_last_event_of_its_context(
    pair: tuple[Session, CartesiaProtocol],
) -> None:
    session, protocol = pair
    _request(protocol, transcript="Hi.", **{"continue": True})
    session.drain()
    (frame,) = _frames(protocol.reply(ErrorOut("c", "encoding_failed", "encoding failed: x")))
    assert frame["error_code"] == "encoding_failed"
    # The context is over for the protocol too: a cancel finds nothing to stop, and no audio of
    # it goes out.
    protocol.receive(json.dumps({"context_id": "c", "cancel": True}))
    assert not any(isinstance(o, CancelStream) for o in session.drain())
    assert not protocol.reply(AudioOut("c", 0, 0.0, 10.0, b"\x00\x00")).frames


def test_inactivity_closes_normally_and_shutdown_says_why(
    pair: tuple[Session, CartesiaProtocol], clock: Clock
) -> None:
    session, protocol = pair
    assert protocol.deadline() == clock.now + INACTIVITY_S
    clock.now += INACTIVITY_S
    protocol.expire()
    assert protocol.deadline() is None
    (close,) = [o for o in session.drain() if isinstance(o, CloseOut)]
    closing = protocol.reply(close)
    assert closing.close is not None and closing.close.code == 1000 and not closing.frames
    reply = protocol.shutdown()
    assert reply.close is not None and reply.close.code == 1012
    (frame,) = _frames(reply)
    assert frame["error_code"] == "shutting_down" and frame["status_code"] == 503


def test_unfinished_text_waits_for_the_buffer_delay(
    pair: tuple[Session, CartesiaProtocol], clock: Clock
) -> None:
    session, protocol = pair
    _request(protocol, transcript="Hello there", max_buffer_delay_ms=500, **{"continue": True})
    assert not any(isinstance(o, SubmitSegment) for o in session.drain())
    assert protocol.deadline() == clock.now + 0.5
    clock.now += 0.5
    protocol.expire()
    assert any(isinstance(o, SubmitSegment) for o in session.drain())
    assert protocol.deadline() == clock.now - 0.5 + CONTEXT_IDLE_S  # the flush is not due again


def test_a_context_left_without_an_end_is_ended_when_idle(
    pair: tuple[Session, CartesiaProtocol], clock: Clock
) -> None:
    session, protocol = pair
    _request(protocol, transcript="Hello there. ", **{"continue": True})
    session.drain()
    assert protocol.deadline() == clock.now + 3.0  # Cartesia's default max_buffer_delay_ms
    clock.now += CONTEXT_IDLE_S
    protocol.expire()
    assert not _errors(session.drain())
    # It is ending now (as after continue false): more text for it is refused.
    assert protocol.deadline() == clock.now - CONTEXT_IDLE_S + INACTIVITY_S
    _request(protocol, transcript="More.", **{"continue": True})
    assert [e.code for e in _errors(session.drain())] == ["context_closing"]


# -- a cancel after the context ended: the listener stopped --------------------------------------


@pytest.fixture
def admitted(context: ProtocolContext, clock: Clock) -> tuple[Session, CartesiaProtocol, Admission]:
    admission = Admission(AdmissionSettings(capacity=2.0))
    session = new_session(admission=admission)
    return session, CartesiaProtocol(session, clock, context), admission


def _spoken_to_the_end(session: Session, protocol: CartesiaProtocol, clock: Clock) -> float:
    """The context ``c``, all its text in one request, spoken and done at the clock's time;
    returns when its listener will have heard it."""
    _request(protocol, transcript="Hello there. ", **{"continue": False})
    outputs = InstantRuntime(session).serve(clock.now)
    assert not _errors(outputs)
    [done] = [o for o in outputs if isinstance(o, DoneOut)]
    assert _frames(protocol.reply(done))[-1]["done"] is True
    assert done.metrics.audio_ms > 0
    return clock.now + done.metrics.audio_ms / 1000.0


def test_a_cancel_after_done_says_the_listener_stopped_hearing(
    admitted: tuple[Session, CartesiaProtocol, Admission], clock: Clock
) -> None:
    session, protocol, admission = admitted
    heard_until = _spoken_to_the_end(session, protocol, clock)
    assert admission.active == 0 and session.open_contexts == 0
    assert admission.load(clock.now) > 0  # its listener is still hearing it
    clock.now += 0.01
    assert clock.now < heard_until  # still playing when the caller barges in
    protocol.receive(json.dumps({"context_id": "c", "cancel": True}))  # Pipecat's barge-in
    assert admission.load(clock.now) == 0
    assert not session.drain()  # nothing to cancel: no error, no CancelledOut


def test_a_cancel_of_another_context_leaves_an_ended_one_counted(
    admitted: tuple[Session, CartesiaProtocol, Admission], clock: Clock
) -> None:
    session, protocol, admission = admitted
    heard_until = _spoken_to_the_end(session, protocol, clock)
    protocol.receive(json.dumps({"context_id": "other", "cancel": True}))
    assert admission.load(clock.now) > 0
    clock.now = heard_until  # heard to its end: it counts no more, cancel or not
    assert admission.load(clock.now) == 0
