"""The ElevenLabs WebSocket protocol without I/O: strict values in, strict JSON out."""

from __future__ import annotations

import json

import pytest

from tests.support.instant_runtime import InstantRuntime
from tests.support.protocols import new_session, protocol_context
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.session.admission import Admission, AdmissionSettings
from voxflow.session.events import AudioOut, ContextMetrics, DoneOut, ErrorOut
from voxflow.session.session import Session
from voxflow.transports.elevenlabs.protocol import ElevenLabsProtocol

METRICS = ContextMetrics(
    ttfa_ms=1.0, audio_ms=10.0, synth_ms=1.0, rtf=0.1, chunks=1, deadline_misses=0
)


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return protocol_context()


def _open(
    context: ProtocolContext, query: dict[str, str], multi: bool = True
) -> tuple[Session, ElevenLabsProtocol]:
    session = new_session()
    return session, ElevenLabsProtocol(session, lambda: 0.0, context, "joe", query, multi)


def _error_frame(session: Session, protocol: ElevenLabsProtocol) -> dict[str, object]:
    (error,) = [o for o in session.drain() if isinstance(o, ErrorOut)]
    reply = protocol.reply(error)
    (frame,) = reply.frames
    assert reply.close is not None and reply.close.code == 1008
    body = json.loads(frame, parse_constant=pytest.fail)
    assert isinstance(body, dict)
    return body


@pytest.mark.parametrize(
    "query",
    [
        {"inactivity_timeout": "1_0"},  # int() takes these; a query string's integer does not
        {"inactivity_timeout": " 20"},
        {"inactivity_timeout": "٣"},
        {"inactivity_timeout": "NaN"},
        {"inactivity_timeout": "9" * 5000},
        {"seed": "1e3"},
        {"seed": "-1"},
        {"auto_mode": "x" * 10_000},
    ],
)
def test_query_numbers_are_plain_integers_in_range(
    context: ProtocolContext, query: dict[str, str]
) -> None:
    session, protocol = _open(context, query)
    body = _error_frame(session, protocol)
    assert body["error"] == "invalid_request" and len(str(body["message"])) < 300


@pytest.mark.parametrize(
    "message",
    [
        {"text": " ", "context_id": "a\x00"},
        {"text": " ", "context_id": "x" * 300},
        {"text": " ", "voice_settings": {"speed": 10**400}},
        {"text": " ", "voice_settings": {"speed": True}},
        {"text": " ", "generation_config": {"chunk_length_schedule": [50, 10**400]}},
    ],
)
def test_bad_values_close_with_an_error_frame(
    context: ProtocolContext, message: dict[str, object]
) -> None:
    session, protocol = _open(context, {"output_format": "pcm_22050"})
    protocol.receive(json.dumps(message))
    body = _error_frame(session, protocol)
    assert body["code"] == 1008 and body["message"]


def test_control_characters_are_aligned_as_the_spaces_spoken(context: ProtocolContext) -> None:
    session, protocol = _open(context, {"output_format": "pcm_22050"}, multi=False)
    protocol.receive(json.dumps({"text": "Hi\x00there\x1b. "}))
    protocol.receive(json.dumps({"text": ""}))  # end of input
    assert not [o for o in session.drain() if isinstance(o, ErrorOut)]
    # No words were timed: the done event sends every character left, as the session has them.
    reply = protocol.reply(DoneOut("stream", METRICS))
    first = json.loads(reply.frames[0], parse_constant=pytest.fail)
    assert "".join(first["alignment"]["chars"]) == "Hi there . "


# -- a close after the context ended: the listener stopped ---------------------------------------


def _with_admission(context: ProtocolContext) -> tuple[Session, ElevenLabsProtocol, Admission]:
    admission = Admission(AdmissionSettings(capacity=2.0))
    session = new_session(admission=admission)
    protocol = ElevenLabsProtocol(
        session, lambda: 0.0, context, "joe", {"output_format": "pcm_22050"}, True
    )
    return session, protocol, admission


def _speak_to_the_end(
    session: Session, protocol: ElevenLabsProtocol, cid: str
) -> tuple[list[str], float]:
    """A turn as Pipecat sends it: text, flush, close_context; the server speaks it all at 0 s.
    Returns the frames of its end and when its listener will have heard it."""
    protocol.receive(json.dumps({"text": "Hello there. ", "context_id": cid}))
    protocol.receive(json.dumps({"text": "", "context_id": cid, "flush": True}))
    protocol.receive(json.dumps({"context_id": cid, "close_context": True}))
    outputs = InstantRuntime(session).serve(0.0)
    assert not [o for o in outputs if isinstance(o, ErrorOut)]
    assert any(isinstance(o, AudioOut) and o.context_id == cid for o in outputs)
    [done] = [o for o in outputs if isinstance(o, DoneOut)]
    frames = list(protocol.reply(done).frames)
    return frames, done.metrics.audio_ms / 1000.0


def test_a_close_after_the_final_says_the_listener_stopped_hearing(
    context: ProtocolContext,
) -> None:
    session, protocol, admission = _with_admission(context)
    frames, heard_s = _speak_to_the_end(session, protocol, "a")
    assert json.loads(frames[-1]) == {"isFinal": True, "contextId": "a"}
    # Ended, and still counted while its listener would be hearing its audio.
    assert admission.active == 0 and session.open_contexts == 0
    assert admission.load(0.0) > 0
    # Pipecat's barge-in after the end of its turn: it closes the context again.
    protocol.receive(json.dumps({"context_id": "a", "close_context": True}))
    assert admission.load(0.0) == 0
    assert session.drain() == []  # nothing to answer: the context had ended
    # Left alone, it would have counted until then.
    session, protocol, admission = _with_admission(context)
    _speak_to_the_end(session, protocol, "a")
    assert admission.load(heard_s - 0.01) > 0 and admission.load(heard_s + 0.01) == 0


def test_a_close_frees_only_the_context_it_names(context: ProtocolContext) -> None:
    session, protocol, admission = _with_admission(context)
    for cid in ("a", "b"):  # two contexts at once: each still heard once both have ended
        protocol.receive(json.dumps({"text": "Hello there. ", "context_id": cid}))
        protocol.receive(json.dumps({"text": "", "context_id": cid, "flush": True}))
        protocol.receive(json.dumps({"context_id": cid, "close_context": True}))
    outputs = InstantRuntime(session).serve(0.0)
    assert len([o for o in outputs if isinstance(o, DoneOut)]) == 2
    both = admission.load(0.0)
    protocol.receive(json.dumps({"context_id": "never-opened", "close_context": True}))
    assert admission.load(0.0) == both
    protocol.receive(json.dumps({"context_id": "b", "close_context": True}))
    assert 0 < admission.load(0.0) < both


def test_a_new_context_of_the_connection_ends_what_its_listener_still_heard(
    context: ProtocolContext,
) -> None:
    session, protocol, admission = _with_admission(context)
    _speak_to_the_end(session, protocol, "a")
    heard = admission.load(0.0)
    assert heard > 0
    _speak_to_the_end(session, protocol, "b")  # the next turn: "a" is behind its listener
    assert admission.load(0.0) == heard  # "b" alone, still heard


def test_a_close_that_crosses_the_contexts_end_is_answered_by_its_final(
    context: ProtocolContext,
) -> None:
    session, protocol, admission = _with_admission(context)
    protocol.receive(json.dumps({"text": "Hello there. ", "context_id": "a"}))
    protocol.receive(json.dumps({"text": "", "context_id": "a", "flush": True}))
    protocol.receive(json.dumps({"context_id": "a", "close_context": True}))
    outputs = InstantRuntime(session).serve(0.0)
    [done] = [o for o in outputs if isinstance(o, DoneOut)]
    # The session has finished the context, but the writer has not sent its isFinal yet when
    # the barge-in's close comes: the context is closing in the protocol's view.
    protocol.receive(json.dumps({"context_id": "a", "close_context": True}))
    assert admission.load(0.0) == 0  # the listener stopped
    [late] = session.drain()
    assert isinstance(late, ErrorOut) and late.code == "unknown_context"
    reply = protocol.reply(late)
    assert not reply.frames and reply.close is None  # not an error for the client
    reply = protocol.reply(done)
    assert json.loads(reply.frames[-1]) == {"isFinal": True, "contextId": "a"}
    assert reply.close is None
