"""The Deepgram WebSocket protocol and query string without I/O: session calls in, frames out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.instant_runtime import InstantRuntime
from tests.support.protocols import new_session, protocol_context
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.wire import Reply
from voxflow.session.admission import Admission, AdmissionSettings
from voxflow.session.errors import SessionError
from voxflow.session.events import (
    AudioOut,
    CancelledOut,
    CancelStream,
    CloseStream,
    ContextMetrics,
    DoneOut,
    ErrorOut,
    OpenStream,
    Output,
    SubmitSegment,
)
from voxflow.transports.deepgram.protocol import (
    FLUSH_LIMIT,
    FLUSH_WINDOW_S,
    SPEAK_MAX_CHARS,
    DeepgramProtocol,
    metadata,
)
from voxflow.transports.deepgram.query import SpeakOptions, parse_speak_query

METRICS = ContextMetrics(
    ttfa_ms=1.0, audio_ms=10.0, synth_ms=1.0, rtf=0.1, chunks=1, deadline_misses=0
)


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return protocol_context()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Harness:
    """A protocol on a session with no driver: outputs are taken with ``drain``."""

    def __init__(
        self, context: ProtocolContext, query: dict[str, str], admission: Admission | None = None
    ) -> None:
        self.session = new_session(admission=admission)
        self.clock = Clock()
        self.options = parse_speak_query(context, query, websocket=True)
        self.protocol = DeepgramProtocol(self.session, self.clock, self.options, 50_000)

    def send(self, **message: Any) -> Reply[str | bytes] | None:
        return self.protocol.receive(json.dumps(message))

    def drain(self) -> list[Output]:
        return self.session.drain()

    def errors(self) -> list[ErrorOut]:
        return [o for o in self.drain() if isinstance(o, ErrorOut)]


def _messages(reply: Reply[str | bytes] | None) -> list[dict[str, Any]]:
    assert reply is not None
    decoded = [json.loads(frame) for frame in reply.frames if isinstance(frame, str)]
    assert all(isinstance(m, dict) for m in decoded)
    return decoded


def _opened(outputs: list[Output]) -> list[OpenStream]:
    return [o for o in outputs if isinstance(o, OpenStream)]


def _error_reply(harness: Harness) -> tuple[dict[str, Any], int]:
    (error,) = harness.errors()
    reply = harness.protocol.reply(error)
    (message,) = _messages(reply)
    assert reply.close is not None
    return message, reply.close.code


@pytest.fixture
def dg(context: ProtocolContext) -> Harness:
    return Harness(context, {"model": "aura-2-thalia-en", "encoding": "linear16"})


# -- the query string -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "websocket", "expected"),
    [
        ({}, True, "pcm_24000"),  # Deepgram's defaults: linear16 at 24 kHz
        ({"encoding": "linear16", "sample_rate": "16000"}, True, "pcm_16000"),
        ({"encoding": "mulaw", "container": "wav"}, True, "ulaw_8000"),  # no container on WS
        ({"encoding": "alaw", "sample_rate": "8000"}, True, "alaw_8000"),
        ({}, False, "wav_24000"),  # REST's default container for linear16 is WAV
        ({"container": "none", "sample_rate": "48000"}, False, "pcm_48000"),
        ({"encoding": "flac", "sample_rate": "16000"}, False, "flac_16000"),
        ({"encoding": "mp3"}, False, "mp3_22050_32"),
        ({"encoding": "mp3", "bit_rate": "48000"}, False, "mp3_24000_48"),
        ({"encoding": "opus", "bit_rate": "100000"}, False, "opus_48000_96"),
        ({"encoding": "aac"}, False, "aac_24000_64"),
    ],
)
def test_query_picks_the_output_format(
    context: ProtocolContext, query: dict[str, str], websocket: bool, expected: str
) -> None:
    assert parse_speak_query(context, query, websocket).output_format.name == expected


@pytest.mark.parametrize(
    ("query", "websocket", "code"),
    [
        ({"encoding": "mp3"}, True, "unsupported_format"),  # streaming is raw audio only
        ({"encoding": "speex"}, False, "unsupported_format"),
        ({"sample_rate": "32000"}, True, "unsupported_format"),  # Deepgram's, not voxflow's
        ({"encoding": "mulaw", "sample_rate": "16000"}, True, "unsupported_format"),
        ({"encoding": "mulaw", "container": "wav"}, False, "unsupported_format"),
        ({"container": "ogg"}, False, "unsupported_format"),
        ({"sample_rate": "1_6000"}, True, "invalid_request"),
        ({"sample_rate": " 16000"}, True, "invalid_request"),
        ({"speed": "fast"}, True, "invalid_voice_settings"),
        ({"speed": "9"}, True, "invalid_voice_settings"),  # out of the voice's range
        ({"model": "nova-3"}, True, "unknown_voice"),
        ({"model": "x" * 1000}, True, "unknown_voice"),
    ],
)
def test_query_refusals(
    context: ProtocolContext, query: dict[str, str], websocket: bool, code: str
) -> None:
    with pytest.raises(SessionError) as refused:
        parse_speak_query(context, query, websocket)
    assert refused.value.code == code
    assert len(refused.value.message) < 1000


def test_aura_models_speak_with_the_default_voice_and_voxflow_names_select_a_voice(
    context: ProtocolContext,
) -> None:
    # English Aura models: the default voice speaks English (a model of another language picks
    # a voice of that language: ``test_language``).
    for model in ("aura-asteria-en", "aura-2-thalia-en", None):
        query = {} if model is None else {"model": model}
        assert parse_speak_query(context, query, True).voice == context.default_voice
    named = parse_speak_query(context, {"model": context.default_voice, "speed": "1.25"}, True)
    assert named.voice == context.default_voice and named.settings.speed == 1.25


def test_metadata_names_the_voice_that_speaks(context: ProtocolContext) -> None:
    options = parse_speak_query(context, {"model": "aura-2-thalia-en"}, True)
    message = json.loads(metadata("rid", options))
    assert message["type"] == "Metadata" and message["request_id"] == "rid"
    assert message["model_name"] == context.default_voice
    assert len(message["model_uuid"]) == 36 and message["model_version"]


# -- turns ----------------------------------------------------------------------------------------


def test_speak_opens_a_turn_at_once_in_the_connection_format(dg: Harness) -> None:
    assert dg.send(type="Speak", text="Hello there. How are you today? ") is None
    outputs = dg.drain()
    (opened,) = _opened(outputs)
    assert opened.output_format == "pcm_24000" and opened.voice == dg.options.voice
    # A whole sentence is submitted before any Flush: audio does not wait for one.
    assert any(isinstance(o, SubmitSegment) for o in outputs)
    assert not any(isinstance(o, CloseStream) for o in outputs)


def test_flush_ends_the_turn_and_flushed_follows_its_audio(dg: Harness) -> None:
    dg.send(type="Speak", text="Hello")
    dg.send(type="Speak", text=" there")
    assert dg.send(type="Flush") is None  # answered after the audio, not now
    assert any(isinstance(o, CloseStream) for o in dg.drain())
    assert dg.protocol.reply(DoneOut("turn-1", METRICS)).frames == [
        json.dumps({"type": "Flushed", "sequence_id": 0}, separators=(",", ":"))
    ]
    dg.send(type="Speak", text="Again.")
    dg.send(type="Flush")
    assert len(_opened(dg.drain())) == 1
    assert _messages(dg.protocol.reply(DoneOut("turn-2", METRICS))) == [
        {"type": "Flushed", "sequence_id": 1}
    ]


def test_a_flush_with_nothing_to_speak_is_answered_at_once(dg: Harness) -> None:
    assert _messages(dg.send(type="Flush")) == [{"type": "Flushed", "sequence_id": 0}]
    assert _messages(dg.send(type="Flush")) == [{"type": "Flushed", "sequence_id": 1}]
    assert dg.session.open_contexts == 0


def test_turns_are_spoken_one_after_the_other(dg: Harness) -> None:
    dg.send(type="Speak", text="First turn.")
    dg.send(type="Flush")
    dg.send(type="Speak", text="Second ")
    dg.send(type="Speak", text="turn.")
    assert dg.send(type="Flush") is None
    assert dg.send(type="Flush") is None  # empty: its Flushed waits for the turns before it
    assert len(_opened(dg.drain())) == 1  # the second waits: its audio would interleave
    reply = dg.protocol.reply(DoneOut("turn-1", METRICS))
    assert _messages(reply) == [{"type": "Flushed", "sequence_id": 0}]
    outputs = dg.drain()
    assert len(_opened(outputs)) == 1
    texts = [o.request.text for o in outputs if isinstance(o, SubmitSegment)]
    assert "".join(texts).strip() == "Second turn."  # its text, waited for, then flushed
    assert any(isinstance(o, CloseStream) for o in outputs)
    assert _messages(dg.protocol.reply(DoneOut("turn-2", METRICS))) == [
        {"type": "Flushed", "sequence_id": 1},
        {"type": "Flushed", "sequence_id": 2},
    ]


def test_clear_cancels_the_turn_and_forgets_what_waits(dg: Harness) -> None:
    dg.send(type="Speak", text="A long first turn that is being spoken.")
    dg.send(type="Flush")
    dg.send(type="Speak", text="Waiting text.")
    assert dg.send(type="Clear") is None  # answered after the cancel
    outputs = dg.drain()
    assert any(isinstance(o, CancelStream) for o in outputs)
    (cancelled,) = [o for o in outputs if isinstance(o, CancelledOut)]
    # No Flushed for the Flush the Clear overtook; sequence ids count Flush and Clear.
    assert _messages(dg.protocol.reply(cancelled)) == [{"type": "Cleared", "sequence_id": 1}]
    assert not _opened(dg.drain())  # the waiting text was forgotten
    dg.send(type="Speak", text="After the clear.")
    dg.send(type="Flush")
    assert len(_opened(dg.drain())) == 1
    assert _messages(dg.protocol.reply(DoneOut("turn-3", METRICS))) == [
        {"type": "Flushed", "sequence_id": 2}
    ]


def test_clear_with_nothing_to_cancel_is_answered_at_once(dg: Harness) -> None:
    assert _messages(dg.send(type="Clear")) == [{"type": "Cleared", "sequence_id": 0}]


def test_a_clear_that_races_the_turns_end_is_answered_by_that_end(dg: Harness) -> None:
    dg.send(type="Speak", text="Short.")
    dg.send(type="Flush")
    # The turn finished in the session (its DoneOut is on its way to the writer) ...
    dg.session.cancel("turn-1", None, 0.0, 0.0)
    dg.drain()
    dg.send(type="Clear")
    (late,) = dg.errors()  # ... so the Clear's cancel finds nothing to cancel.
    assert late.code == "unknown_context"
    assert not dg.protocol.reply(late).frames  # not an error for the client
    assert _messages(dg.protocol.reply(DoneOut("turn-1", METRICS))) == [
        {"type": "Cleared", "sequence_id": 1}
    ]


def test_close_speaks_the_rest_then_closes_normally(dg: Harness) -> None:
    dg.send(type="Speak", text="Unflushed words.")
    assert dg.send(type="Close") is None
    assert any(isinstance(o, CloseStream) for o in dg.drain())
    assert dg.send(type="Speak", text="ignored after Close") is None
    reply = dg.protocol.reply(DoneOut("turn-1", METRICS))
    assert reply.frames == []  # no Flush asked for a Flushed
    assert reply.close is not None and reply.close.code == 1000
    assert not _opened(dg.drain())


def test_close_when_idle_closes_at_once(dg: Harness) -> None:
    reply = dg.send(type="Close")
    assert reply is not None and reply.close is not None and reply.close.code == 1000


def test_audio_is_sent_as_binary_frames(dg: Harness) -> None:
    reply = dg.protocol.reply(AudioOut("turn-1", 0, 0.0, 10.0, b"\x01\x02"))
    assert reply.frames == [b"\x01\x02"] and reply.close is None


# -- limits and errors ----------------------------------------------------------------------------


def test_flushes_over_the_rate_limit_get_a_warning_and_are_not_processed(dg: Harness) -> None:
    for expected in range(FLUSH_LIMIT):
        assert _messages(dg.send(type="Flush")) == [{"type": "Flushed", "sequence_id": expected}]
    dg.send(type="Speak", text="Held.")
    (warning,) = _messages(dg.send(type="Flush"))
    assert warning["type"] == "Warning" and warning["warn_msg"] == warning["description"]
    assert not any(isinstance(o, CloseStream) for o in dg.drain())  # the turn goes on
    dg.clock.now = FLUSH_WINDOW_S
    assert dg.send(type="Flush") is None  # a new window: processed (Flushed after the audio)
    assert any(isinstance(o, CloseStream) for o in dg.drain())


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("{not json", "UNPARSABLE_CLIENT_MESSAGE"),
        ("[1, 2]", "UNPARSABLE_CLIENT_MESSAGE"),
        ('{"type": "Speak", "text": 3}', "UNPARSABLE_CLIENT_MESSAGE"),
        ('{"type": "Speak", "text": "\\ud800"}', "UNPARSABLE_CLIENT_MESSAGE"),
        ('{"type": "Finalize"}', "UNPARSABLE_CLIENT_MESSAGE"),
        ('{"text": "no type"}', "UNPARSABLE_CLIENT_MESSAGE"),
    ],
)
def test_malformed_messages_close_with_an_error_message(dg: Harness, frame: str, code: str) -> None:
    assert dg.protocol.receive(frame) is None
    message, close = _error_reply(dg)
    assert message["type"] == "Error" and message["code"] == code and message["description"]
    assert close == 1008
    assert dg.send(type="Speak", text="ignored once failed") is None
    assert not dg.drain()


def test_binary_frames_are_refused(dg: Harness) -> None:
    dg.protocol.receive(b"\x00\x01")
    message, close = _error_reply(dg)
    assert message["code"] == "UNPARSABLE_CLIENT_MESSAGE" and close == 1008


def test_text_over_deepgrams_limit_closes_as_too_big(dg: Harness) -> None:
    dg.send(type="Speak", text="a" * SPEAK_MAX_CHARS)
    assert not dg.errors()
    dg.send(type="Speak", text="a" * (SPEAK_MAX_CHARS + 1))
    message, close = _error_reply(dg)
    assert message["code"] == "INPUT_TOO_LONG" and close == 1009


def test_waiting_text_is_bounded(context: ProtocolContext) -> None:
    harness = Harness(context, {})
    harness.protocol = DeepgramProtocol(harness.session, harness.clock, harness.options, 100)
    harness.send(type="Speak", text="Being spoken.")
    harness.send(type="Flush")
    harness.send(type="Speak", text="b" * 60)
    harness.send(type="Speak", text="b" * 60)
    message, close = _error_reply(harness)
    assert message["code"] == "INPUT_TOO_LONG" and close == 1009


def test_a_full_server_refuses_the_turn_with_try_again_later(context: ProtocolContext) -> None:
    admission = Admission(AdmissionSettings(max_streams=1))
    admission.acquire("piper", 1, 0.0)  # another connection's stream
    harness = Harness(context, {}, admission)
    harness.send(type="Speak", text="No room.")
    message, close = _error_reply(harness)
    assert message["code"] == "TOO_MANY_REQUESTS" and close == 1013


def test_a_failed_segment_is_a_warning_and_the_connection_goes_on(dg: Harness) -> None:
    reply = dg.protocol.reply(ErrorOut("turn-1", "synthesis_failed", "synthesis failed: x", True))
    (message,) = _messages(reply)
    assert message["type"] == "Warning" and reply.close is None


def test_shutdown_says_why_and_closes_with_service_restart(dg: Harness) -> None:
    reply = dg.protocol.shutdown()
    (message,) = _messages(reply)
    assert message["type"] == "Error" and message["code"] == "SHUTTING_DOWN"
    assert reply.close is not None and reply.close.code == 1012


def test_options_of_the_connection_reach_every_turn(context: ProtocolContext) -> None:
    harness = Harness(context, {"encoding": "mulaw", "speed": "0.8"})
    harness.send(type="Speak", text="Phone audio.")
    (opened,) = _opened(harness.drain())
    assert opened.output_format == "ulaw_8000"
    assert isinstance(harness.options, SpeakOptions) and harness.options.settings.speed == 0.8


# -- a Clear after the turns ended: their listener stopped ----------------------------------------


def _admitted(context: ProtocolContext) -> tuple[Harness, Admission]:
    admission = Admission(AdmissionSettings(capacity=2.0))
    return Harness(context, {"encoding": "linear16"}, admission), admission


def _speak_turn(harness: Harness, text: str) -> None:
    """A turn (Speak, Flush) spoken to its end at the clock's time (0 s), its Flushed sent: its
    listener hears it from then on."""
    harness.send(type="Speak", text=text)
    harness.send(type="Flush")
    outputs = InstantRuntime(harness.session).serve(harness.clock.now)
    assert not [o for o in outputs if isinstance(o, ErrorOut)]
    [done] = [o for o in outputs if isinstance(o, DoneOut)]
    assert _messages(harness.protocol.reply(done))[-1]["type"] == "Flushed"
    assert done.metrics.audio_ms > 0


def test_a_clear_after_the_turns_ended_says_their_listener_stopped(
    context: ProtocolContext,
) -> None:
    dg, admission = _admitted(context)
    _speak_turn(dg, "Hello there.")
    _speak_turn(dg, "How are you?")
    assert dg.session.open_contexts == 0 and admission.active == 0
    assert admission.load(0.0) > 0  # both still playing
    (cleared,) = _messages(dg.send(type="Clear"))  # nothing speaking: answered at once
    assert cleared["type"] == "Cleared"
    assert admission.load(0.0) == 0  # every ended turn stopped playing


def test_a_clear_while_a_turn_speaks_stops_the_ended_ones_too(context: ProtocolContext) -> None:
    dg, admission = _admitted(context)
    _speak_turn(dg, "Hello there.")
    ended = admission.load(0.0)
    dg.send(type="Speak", text="And a second turn that is still being spoken.")
    dg.drain()
    # The new turn took the first one's place in the listener's ears, and counts.
    assert admission.load(0.0) == ended
    assert dg.send(type="Clear") is None  # answered after the cancel
    [cancelled] = [o for o in dg.drain() if isinstance(o, CancelledOut)]
    assert _messages(dg.protocol.reply(cancelled)) == [{"type": "Cleared", "sequence_id": 1}]
    # The client dropped everything it was playing: the first turn's tail as well.
    assert admission.load(0.0) == 0
