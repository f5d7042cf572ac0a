"""The Wyoming protocol without I/O: events in, session calls and answers; session events in,
Wyoming events out. No server, no socket: the session's outputs are taken with ``drain()`` and
its events (audio, done, errors) are handed to ``reply`` by hand, as the runner's writer would."""

from __future__ import annotations

import pytest

from tests.support.protocols import new_session, protocol_context
from tests.support.wyoming_messages import (
    AudioChunk,
    AudioStart,
    Describe,
    Error,
    Event,
    Info,
    Ping,
    Pong,
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)
from voxflow.connection.wire import Reply
from voxflow.session.events import (
    AudioOut,
    CloseStream,
    ContextMetrics,
    DoneOut,
    ErrorOut,
    OpenStream,
    SubmitSegment,
)
from voxflow.session.session import Session
from voxflow.transports.wyoming.framing import BadEvent
from voxflow.transports.wyoming.protocol import NORMAL_CLOSE, WyomingProtocol

METRICS = ContextMetrics(
    ttfa_ms=1.0, audio_ms=10.0, synth_ms=1.0, rtf=0.1, chunks=1, deadline_misses=0
)
# The contexts the protocol opens, one per request, in order.
FIRST, SECOND = "wyoming-1", "wyoming-2"


@pytest.fixture
def session() -> Session:
    return new_session()


@pytest.fixture
def protocol(session: Session) -> WyomingProtocol:
    return WyomingProtocol(session, lambda: 0.0, protocol_context())


def types(reply: Reply[Event] | None) -> list[str]:
    assert reply is not None
    return [event.type for event in reply.frames]


def audio(context_id: str, seq: int = 0) -> AudioOut:
    return AudioOut(context_id, seq, 10.0 * seq, 10.0, b"\x01\x00" * 8)


def done(context_id: str) -> DoneOut:
    return DoneOut(context_id, METRICS)


def opened(session: Session) -> int:
    """How many contexts the session opened since this was last asked."""
    return sum(isinstance(o, OpenStream) for o in session.drain())


def test_describe_and_ping_are_answered_at_once(protocol: WyomingProtocol) -> None:
    reply = protocol.receive(Describe().event())
    assert types(reply) == ["info"]
    info = Info.from_event(reply.frames[0])
    assert info.tts and info.tts[0].supports_synthesize_streaming
    (pong,) = protocol.receive(Ping(text="there?").event()).frames
    assert Pong.from_event(pong).text == "there?"
    assert protocol.deadline() is None
    assert protocol.peer_gone()  # nothing owed


def test_synthesize_opens_one_context_and_answers_with_audio(
    protocol: WyomingProtocol, session: Session
) -> None:
    assert types(protocol.receive(Synthesize(text="Hello there.").event())) == []
    outputs = session.drain()
    assert any(isinstance(o, OpenStream) for o in outputs)
    assert any(isinstance(o, SubmitSegment) for o in outputs)
    assert any(isinstance(o, CloseStream) for o in outputs)  # one-shot: its input is complete
    first = protocol.reply(audio(FIRST))
    assert types(first) == ["audio-start", "audio-chunk"]
    start, chunk = AudioStart.from_event(first.frames[0]), AudioChunk.from_event(first.frames[1])
    assert (start.rate, start.width, start.channels) == (22050, 2, 1)
    assert (chunk.rate, chunk.timestamp) == (22050, 0)
    assert types(protocol.reply(audio(FIRST, 1))) == ["audio-chunk"]
    last = protocol.reply(done(FIRST))
    assert types(last) == ["audio-stop"] and last.close is None
    # Events of a context that is not the current request's are not answered.
    assert types(protocol.reply(audio(FIRST, 2))) == []


def test_error_events_keep_the_wyoming_shape(protocol: WyomingProtocol) -> None:
    (error,) = protocol.reply(ErrorOut(None, "synthesis_failed", "it broke", True)).frames
    assert error.to_dict() == {
        "type": "error",
        "data": {"text": "it broke", "code": "synthesis_failed"},
    }


def test_a_bad_event_gets_an_error_and_the_next_request_still_works(
    protocol: WyomingProtocol, session: Session
) -> None:
    reply = protocol.receive(BadEvent("event header: message is not valid JSON"))
    (error,) = reply.frames
    assert reply.close is None
    assert Error.from_event(error).code == "invalid_event"
    for bad in (
        Event(type="synthesize", data={"text": 42}),
        Event(type="synthesize", data={"text": "Hi.", "voice": "joe"}),
        SynthesizeChunk(text="orphan").event(),
        SynthesizeStop().event(),
    ):
        (error,) = protocol.receive(bad).frames
        assert Error.from_event(error).code in ("invalid_event", "no_stream")
    assert session.open_contexts == 0
    assert types(protocol.receive(Synthesize(text="Still here.").event())) == []
    assert session.open_contexts == 1
    assert types(protocol.reply(done(FIRST))) == ["audio-start", "audio-stop"]


def test_a_fatal_bad_event_gets_an_error_then_closes(protocol: WyomingProtocol) -> None:
    reply = protocol.receive(BadEvent("data_length must be an integer", fatal=True))
    assert types(reply) == ["error"] and reply.close == NORMAL_CLOSE
    # Nothing after it is read as an event.
    assert types(protocol.receive(Describe().event())) == []


def test_unknown_voice_and_text_format_are_errors_without_a_context(
    protocol: WyomingProtocol, session: Session
) -> None:
    ghost = Synthesize(text="Hi.", voice=SynthesizeVoice(name="nobody")).event()
    (error,) = protocol.receive(ghost).frames
    assert Error.from_event(error).code == "unknown_voice"
    markdown = Event(type="synthesize", data={"text": "*Hi*", "text_format": "markdown"})
    (error,) = protocol.receive(markdown).frames
    assert Error.from_event(error).code == "unsupported_text_format"
    assert "'text' or 'ssml'" in Error.from_event(error).text
    assert session.open_contexts == 0 and protocol.peer_gone()


def test_requests_arriving_during_an_answer_wait_and_are_answered_in_order(
    protocol: WyomingProtocol, session: Session
) -> None:
    assert types(protocol.receive(Synthesize(text="First one.").event())) == []
    for waiting in (
        Describe().event(),
        BadEvent("event header needs a string 'type'"),
        Synthesize(text="Second one.").event(),
        Ping(text="third").event(),
    ):
        assert types(protocol.receive(waiting)) == []
    assert opened(session) == 1  # the second request has not started
    assert types(protocol.reply(audio(FIRST))) == ["audio-start", "audio-chunk"]
    # The first answer ends; what waited is applied in order up to the next request.
    assert types(protocol.reply(done(FIRST))) == ["audio-stop", "info", "error"]
    assert opened(session) == 1  # the second request started
    assert types(protocol.reply(audio(SECOND))) == ["audio-start", "audio-chunk"]
    assert types(protocol.reply(done(SECOND))) == ["audio-stop", "pong"]
    assert protocol.peer_gone()


def test_a_half_closed_client_gets_its_answer_then_the_connection_closes(
    protocol: WyomingProtocol,
) -> None:
    protocol.receive(Synthesize(text="Short and sweet.").event())
    protocol.receive(Describe().event())
    assert not protocol.peer_gone()  # an answer is owed: the writer goes on
    assert types(protocol.reply(audio(FIRST))) == ["audio-start", "audio-chunk"]
    last = protocol.reply(done(FIRST))
    assert types(last) == ["audio-stop", "info"] and last.close == NORMAL_CLOSE


def test_a_client_leaving_an_open_stream_is_owed_nothing(protocol: WyomingProtocol) -> None:
    protocol.receive(SynthesizeStart().event())
    protocol.receive(SynthesizeChunk(text="Hello there, and").event())
    # Without its synthesize-stop the stream never ends: the connection ends now.
    assert protocol.peer_gone()


def test_a_stream_speaks_as_text_arrives_and_ignores_the_repeated_text(
    protocol: WyomingProtocol, session: Session
) -> None:
    voice = SynthesizeVoice(name="joe")
    assert types(protocol.receive(SynthesizeStart(voice=voice).event())) == []
    assert types(protocol.receive(SynthesizeChunk(text="Good evening, and ").event())) == []
    # While the stream's text is arriving, other events are applied at once.
    assert types(protocol.receive(Ping().event())) == ["pong"]
    (error,) = protocol.receive(SynthesizeStart().event()).frames
    assert Error.from_event(error).code == "stream_open"
    assert types(protocol.receive(SynthesizeChunk(text="welcome to the show.").event())) == []
    assert types(protocol.reply(audio(FIRST))) == ["audio-start", "audio-chunk"]
    session.drain()
    # Home Assistant's copy of the whole text: not spoken a second time.
    protocol.receive(Synthesize(text="Good evening, and welcome to the show.").event())
    assert not [o for o in session.drain() if isinstance(o, SubmitSegment | OpenStream)]
    assert types(protocol.receive(SynthesizeStop().event())) == []
    assert any(isinstance(o, CloseStream) for o in session.drain())
    assert not protocol.peer_gone()  # the stream's input is complete: its answer is owed
    last = protocol.reply(done(FIRST))
    assert types(last) == ["audio-stop", "synthesize-stopped"] and last.close == NORMAL_CLOSE


def test_a_stream_whose_start_failed_still_gets_synthesize_stopped(
    protocol: WyomingProtocol, session: Session
) -> None:
    voice = SynthesizeVoice(name="nobody")
    (error,) = protocol.receive(SynthesizeStart(voice=voice).event()).frames
    assert Error.from_event(error).code == "unknown_voice"
    assert types(protocol.receive(SynthesizeChunk(text="Hello there.").event())) == []
    assert types(protocol.receive(Synthesize(text="Hello there.", voice=voice).event())) == []
    assert session.open_contexts == 0
    assert types(protocol.receive(SynthesizeStop().event())) == ["synthesize-stopped"]
    assert protocol.peer_gone()


def test_a_context_that_fails_ends_its_request_and_the_next_one_starts(
    protocol: WyomingProtocol, session: Session
) -> None:
    protocol.receive(Synthesize(text="First one.").event())
    protocol.receive(Synthesize(text="Second one.").event())
    assert types(protocol.reply(audio(FIRST))) == ["audio-start", "audio-chunk"]
    # A failed segment is reported and the context goes on.
    failed = ErrorOut(FIRST, "synthesis_failed", "synthesis failed: boom", True)
    assert types(protocol.reply(failed)) == ["error"]
    assert opened(session) == 1
    # A failed encoder ends the context: no done follows, so the error ends the request.
    broken = ErrorOut(FIRST, "encoding_failed", "encoding failed: boom")
    assert types(protocol.reply(broken)) == ["error"]
    assert opened(session) == 1  # the second request started
    assert types(protocol.reply(done(SECOND))) == ["audio-start", "audio-stop"]


def test_a_streamed_context_that_fails_still_ends_with_synthesize_stopped(
    protocol: WyomingProtocol,
) -> None:
    protocol.receive(SynthesizeStart().event())
    protocol.receive(SynthesizeChunk(text="Hello there.").event())
    broken = ErrorOut(FIRST, "encoding_failed", "encoding failed: boom")
    assert types(protocol.reply(broken)) == ["error"]
    # Its later chunks are dropped; its stop is answered at once.
    assert types(protocol.receive(SynthesizeChunk(text="More.").event())) == []
    assert types(protocol.receive(SynthesizeStop().event())) == ["synthesize-stopped"]
    # The next request is a fresh context.
    protocol.receive(SynthesizeStart().event())
    protocol.receive(SynthesizeStop().event())
    assert types(protocol.reply(done(SECOND))) == [
        "audio-start",
        "audio-stop",
        "synthesize-stopped",
    ]


def test_long_texts_go_to_the_session_in_pieces(
    protocol: WyomingProtocol, session: Session
) -> None:
    step = protocol_context().max_message_chars
    text = ("word " * (step // 2))[: 2 * step + 10]
    protocol.receive(Synthesize(text=text).event())
    assert not [o for o in session.drain() if isinstance(o, ErrorOut)]
    assert session.open_contexts == 1


def test_a_stream_whose_context_failed_ends_after_its_error(
    protocol: WyomingProtocol, session: Session
) -> None:
    protocol.receive(SynthesizeStart().event())
    (serial,) = [o.serial for o in session.drain() if isinstance(o, OpenStream)]
    protocol.receive(SynthesizeChunk(text="Hello there.").event())
    session.encode_failed(serial, "boom")  # the context is gone; its error is not replied yet
    (broken,) = [o for o in session.drain() if isinstance(o, ErrorOut)]
    # Text for it now must not open a new context.
    assert types(protocol.receive(SynthesizeChunk(text="More text.").event())) == []
    assert opened(session) == 0 and session.open_contexts == 0
    # Its stop waits for its error, so synthesize-stopped follows the error.
    assert types(protocol.receive(SynthesizeStop().event())) == []
    assert not protocol.peer_gone()
    last = protocol.reply(broken)
    assert types(last) == ["error", "synthesize-stopped"] and last.close == NORMAL_CLOSE


@pytest.mark.parametrize(
    ("voice", "code"),
    [
        (SynthesizeVoice(name="joe", speaker="²"), "unknown_speaker"),  # a digit int() refuses
        (SynthesizeVoice(name="joe", speaker="٣"), "unknown_speaker"),
        (SynthesizeVoice(name="joe", speaker="9" * 5000), "unknown_speaker"),
        (SynthesizeVoice(name="jo\x00e"), "unknown_voice"),
        (SynthesizeVoice(name="x" * 10_000), "unknown_voice"),
        (SynthesizeVoice(language="en\nUS"), "invalid_language"),
    ],
)
def test_bad_voice_fields_are_clear_errors(
    protocol: WyomingProtocol, voice: SynthesizeVoice, code: str
) -> None:
    (error,) = protocol.receive(Synthesize(text="Hi.", voice=voice).event()).frames
    answer = Error.from_event(error)
    assert answer.code == code
    assert answer.text is not None and len(answer.text) < 300  # the value is not echoed whole


def test_control_characters_in_text_reach_the_session_as_spaces(
    protocol: WyomingProtocol, session: Session
) -> None:
    assert types(protocol.receive(Synthesize(text="Hello\x00there.\x7f").event())) == []
    texts = [o.request.text for o in session.drain() if isinstance(o, SubmitSegment)]
    assert texts and "\x00" not in "".join(texts) and "Hello there." in "".join(texts)
