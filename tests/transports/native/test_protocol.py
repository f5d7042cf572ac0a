"""The native protocol without I/O: frames in, session calls; session events in, frames out."""

from __future__ import annotations

import json

import pytest

from tests.support.bad_frames import BAD_FRAMES
from tests.support.instant_runtime import InstantRuntime
from voxflow.connection.wire import Close
from voxflow.engines.registry import VoiceRegistry
from voxflow.session.admission import Admission, AdmissionSettings
from voxflow.session.events import (
    CancelledOut,
    CloseOut,
    DoneOut,
    ErrorOut,
    OpenStream,
    SubmitSegment,
)
from voxflow.session.options import SessionConfig
from voxflow.session.session import Session
from voxflow.transports.native.errors import wire_code
from voxflow.transports.native.protocol import NativeProtocol


@pytest.fixture(scope="module")
def registry() -> VoiceRegistry:
    return VoiceRegistry(None)


@pytest.fixture
def session(registry: VoiceRegistry) -> Session:
    return Session(SessionConfig(default_voice=registry.default_voice), registry.get)


def _frame(**body: object) -> str:
    return json.dumps(body)


def test_bad_frames_become_error_events_and_the_protocol_goes_on(session: Session) -> None:
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    for raw, code in BAD_FRAMES.values():
        protocol.receive(raw if isinstance(raw, str) else raw.decode("latin-1"))
        errors = [o for o in session.drain() if isinstance(o, ErrorOut)]
        assert [e.code for e in errors] == [code]
    protocol.receive(b"\x00binary")
    assert [o.code for o in session.drain() if isinstance(o, ErrorOut)] == ["invalid_message"]
    # Still usable: a good message opens a context and submits text.
    protocol.receive(_frame(type="text", context_id="a", text="Hello there. "))
    protocol.receive(_frame(type="flush", context_id="a"))
    outputs = session.drain()
    assert any(isinstance(o, OpenStream) for o in outputs)
    assert any(isinstance(o, SubmitSegment) for o in outputs)


def test_every_error_frame_encodes_as_utf8(session: Session) -> None:
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    protocol.receive(_frame(type="nope", context_id="x"))
    (error,) = session.drain()
    assert isinstance(error, ErrorOut) and error.code == "unknown_type"
    (frame,) = protocol.reply(error).frames
    assert isinstance(frame, str)
    assert json.loads(frame)["code"] == "unknown_type" and frame.encode("utf-8")


def test_close_event_closes_normally(session: Session) -> None:
    protocol = NativeProtocol(session, lambda: 0.0, binary=True)
    reply = protocol.reply(CloseOut("bye"))
    assert reply.frames == () and reply.close == Close(1000, "bye")
    assert protocol.peer_gone() and protocol.deadline() is None


def _errors(session: Session) -> list[tuple[str | None, str]]:
    return [(o.context_id, o.code) for o in session.drain() if isinstance(o, ErrorOut)]


@pytest.mark.parametrize(
    "body",
    [
        {"type": "cancel", "context_id": "a", "played_ms": -1},
        {"type": "cancel", "context_id": "a", "played_ms": 10**400},  # no float holds it
        {"type": "cancel", "context_id": "a", "played_ms": True},
        {"type": "cancel", "context_id": "a", "played_ms": "12"},
        {"type": "start", "context_id": "b", "speed": 10**400},
        {"type": "start", "context_id": "b", "speed": True},
        {"type": "start", "context_id": "b", "speed": 0},
        {"type": "start", "context_id": "b", "noise_w": -(10**400)},
        {"type": "start", "context_id": "b", "seed": -1},
        {"type": "start", "context_id": "b", "seed": 2**64},
        {"type": "start", "context_id": "b", "seed": 1.5},
    ],
)
def test_numbers_out_of_range_are_invalid_messages(session: Session, body: object) -> None:
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    protocol.receive(_frame(type="text", context_id="a", text="Hello there. "))
    session.drain()
    protocol.receive(json.dumps(body))
    # On the wire, as docs/protocol.md documents it (finer codes fold into invalid_message).
    assert [wire_code(code) for _, code in _errors(session)] == ["invalid_message"]


def test_played_ms_is_echoed_as_json_and_a_nan_never_arrives(session: Session) -> None:
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    protocol.receive(_frame(type="text", context_id="a", text="Hello there. "))
    protocol.receive('{"type": "cancel", "context_id": "a", "played_ms": NaN}')
    assert _errors(session) == [(None, "invalid_json")]  # the context is still open
    protocol.receive(_frame(type="cancel", context_id="a", played_ms=0))
    (cancelled,) = [o for o in session.drain() if isinstance(o, CancelledOut)]
    (frame,) = protocol.reply(cancelled).frames
    assert isinstance(frame, str)
    assert json.loads(frame, parse_constant=pytest.fail)["played_ms"] == 0.0


def test_control_characters_in_text_reach_the_session_as_spaces(session: Session) -> None:
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    protocol.receive(_frame(type="text", context_id="a", text="Hello\x00there,\x1b friend. "))
    protocol.receive(_frame(type="flush", context_id="a"))
    texts = [o.request.text for o in session.drain() if isinstance(o, SubmitSegment)]
    assert texts and "\x00" not in "".join(texts) and "\x1b" not in "".join(texts)
    assert "Hello there" in "".join(texts)


@pytest.mark.parametrize("context_id", ["x" * 257, "a\x00b", "line\nbreak", "\x85"])
def test_a_bad_context_id_is_refused_and_not_echoed(session: Session, context_id: str) -> None:
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    protocol.receive(_frame(type="text", context_id=context_id, text="Hi. "))
    outputs = session.drain()
    (error,) = [o for o in outputs if isinstance(o, ErrorOut)]
    assert error.context_id is None and error.code == "invalid_message"
    assert not any(isinstance(o, OpenStream) for o in outputs)
    (frame,) = protocol.reply(error).frames
    assert isinstance(frame, str) and context_id not in frame


def test_a_cancel_after_done_is_unknown_but_the_listener_stopped(registry: VoiceRegistry) -> None:
    admission = Admission(AdmissionSettings(capacity=2.0))
    config = SessionConfig(default_voice=registry.default_voice)
    session = Session(config, registry.get, admission)
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    protocol.receive(_frame(type="text", context_id="a", text="Hello there. "))
    protocol.receive(_frame(type="end", context_id="a"))
    outputs = InstantRuntime(session).serve(0.0)
    assert any(isinstance(o, DoneOut) for o in outputs)
    assert not any(isinstance(o, ErrorOut) for o in outputs)
    assert admission.active == 0 and admission.load(0.0) > 0  # ended, still heard
    protocol.receive(_frame(type="cancel", context_id="a", played_ms=300))
    assert _errors(session) == [("a", "unknown_context")]  # as before: it had ended
    assert admission.load(0.0) == 0
