"""The ElevenLabs WebSocket protocol without I/O: strict values in, strict JSON out."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from voxflow.config import ServerSettings
from voxflow.session.events import ContextMetrics, DoneOut, ErrorOut
from voxflow.session.services import Services
from voxflow.session.session import Session
from voxflow.transports.elevenlabs.protocol import ElevenLabsProtocol

METRICS = ContextMetrics(
    ttfa_ms=1.0, audio_ms=10.0, synth_ms=1.0, rtf=0.1, chunks=1, deadline_misses=0
)


@pytest.fixture(scope="module")
def services() -> Iterator[Services]:
    built = Services.build(ServerSettings(workers=1))
    yield built
    built.shutdown()


def _open(
    services: Services, query: dict[str, str], multi: bool = True
) -> tuple[Session, ElevenLabsProtocol]:
    session = Session(services.session_config(), services.registry.get)
    return session, ElevenLabsProtocol(session, lambda: 0.0, services, "joe", query, multi)


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
    services: Services, query: dict[str, str]
) -> None:
    session, protocol = _open(services, query)
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
    services: Services, message: dict[str, object]
) -> None:
    session, protocol = _open(services, {"output_format": "pcm_22050"})
    protocol.receive(json.dumps(message))
    body = _error_frame(session, protocol)
    assert body["code"] == 1008 and body["message"]


def test_control_characters_are_aligned_as_the_spaces_spoken(services: Services) -> None:
    session, protocol = _open(services, {"output_format": "pcm_22050"}, multi=False)
    protocol.receive(json.dumps({"text": "Hi\x00there\x1b. "}))
    protocol.receive(json.dumps({"text": ""}))  # end of input
    assert not [o for o in session.drain() if isinstance(o, ErrorOut)]
    # No words were timed: the done event sends every character left, as the session has them.
    reply = protocol.reply(DoneOut("stream", METRICS))
    first = json.loads(reply.frames[0], parse_constant=pytest.fail)
    assert "".join(first["alignment"]["chars"]) == "Hi there . "
