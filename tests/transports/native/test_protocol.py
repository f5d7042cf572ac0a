"""The native protocol without I/O: frames in, session calls; session events in, frames out."""

from __future__ import annotations

import json

import pytest

from tests.transports.test_wire import BAD_FRAMES
from voxflow.engines.registry import VoiceRegistry
from voxflow.session.events import CloseOut, ErrorOut, OpenStream, SubmitSegment
from voxflow.session.runner import Close
from voxflow.session.session import Session, SessionConfig
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
