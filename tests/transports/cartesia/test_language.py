"""Cartesia's ``language`` (and ``locale``) without I/O, on the WebSocket's generation requests
and ``POST /tts/bytes``: checked against the voice; a mismatch or a malformed code refuses the
context in Cartesia's error shape before anything is spoken; none behaves as before."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.language_voices import ALPHA, HEART, language_context, language_session
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.session.errors import SessionError
from voxflow.session.events import ErrorOut, OpenStream
from voxflow.session.session import Session
from voxflow.transports.cartesia.http import BytesBody, error_response, plan
from voxflow.transports.cartesia.protocol import CartesiaProtocol

S16 = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000}


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return language_context()


def _request(voice: str, **fields: Any) -> str:
    message = {
        "context_id": "c",
        "transcript": "Hello. ",
        "continue": True,
        "voice": {"mode": "id", "id": voice},
        "output_format": S16,
        **fields,
    }
    return json.dumps(message)


def _send(context: ProtocolContext, frame: str) -> tuple[Session, CartesiaProtocol, list[Any]]:
    session = language_session()
    protocol = CartesiaProtocol(session, lambda: 0.0, context)
    protocol.receive(frame)
    return session, protocol, session.drain()


@pytest.mark.parametrize(
    ("voice", "fields"),
    [
        (ALPHA.name, {"language": "ja"}),
        (ALPHA.name, {"locale": "ja-JP"}),
        (HEART.name, {"language": "en"}),
        (HEART.name, {"locale": "en-US"}),
        (HEART.name, {}),  # none: as before
        (HEART.name, {"language": None}),
    ],
)
def test_a_language_the_voice_speaks_opens_the_context(
    context: ProtocolContext, voice: str, fields: dict[str, Any]
) -> None:
    _, _, outputs = _send(context, _request(voice, **fields))
    assert not [o for o in outputs if isinstance(o, ErrorOut)]
    assert [o.voice for o in outputs if isinstance(o, OpenStream)] == [voice]


@pytest.mark.parametrize(
    ("voice", "fields", "error"),
    [
        (HEART.name, {"language": "ja"}, "unsupported_language"),
        (ALPHA.name, {"language": "en"}, "unsupported_language"),
        (HEART.name, {"locale": "en-GB"}, "unsupported_language"),
        (HEART.name, {"language": "english"}, "invalid_language"),
        (HEART.name, {"language": ""}, "invalid_language"),
        (HEART.name, {"language": 7}, "invalid_request"),
        (ALPHA.name, {"language": "ja", "locale": "ja-JP"}, "invalid_request"),
    ],
)
def test_a_mismatch_refuses_the_context_in_cartesias_shape(
    context: ProtocolContext, voice: str, fields: dict[str, Any], error: str
) -> None:
    _, protocol, outputs = _send(context, _request(voice, **fields))
    assert not [o for o in outputs if isinstance(o, OpenStream)]  # nothing is spoken
    (refusal,) = [o for o in outputs if isinstance(o, ErrorOut)]
    (frame,) = protocol.reply(refusal).frames
    body = json.loads(frame)
    assert (body["type"], body["context_id"], body["done"]) == ("error", "c", True)
    assert (body["status_code"], body["error_code"]) == (400, error)
    assert body["message"] and body["error"] == f"{body['title']}: {body['message']}"


def test_the_mismatch_is_titled_and_says_what_the_voice_speaks(context: ProtocolContext) -> None:
    _, protocol, outputs = _send(context, _request(HEART.name, language="ja"))
    (refusal,) = [o for o in outputs if isinstance(o, ErrorOut)]
    body = json.loads(protocol.reply(refusal).frames[0])
    assert body["title"] == "Unsupported language"
    assert body["message"] == "voice kokoro:af_heart speaks en_US, not ja"


# -- POST /tts/bytes ------------------------------------------------------------------------------


def _body(voice: str, **fields: Any) -> BytesBody:
    raw = {"transcript": "Hello.", "voice": {"mode": "id", "id": voice}, "output_format": S16}
    return BytesBody.model_validate(json.dumps({**raw, **fields}).encode())


@pytest.mark.parametrize(
    ("voice", "fields", "language"),
    [
        (ALPHA.name, {"language": "ja"}, "ja"),
        (ALPHA.name, {"locale": "ja_JP"}, "ja_JP"),
        (HEART.name, {}, None),
    ],
)
def test_bytes_a_language_the_voice_speaks_is_planned(
    context: ProtocolContext, voice: str, fields: dict[str, Any], language: str | None
) -> None:
    checked = plan(context, _body(voice, **fields))
    assert (checked.voice, checked.language) == (voice, language)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"language": "ja"}, "unsupported_language"),
        ({"language": "x-y-z"}, "invalid_language"),
        ({"language": "en", "locale": "en-US"}, "invalid_request"),
    ],
)
def test_bytes_a_mismatch_is_cartesias_400(
    context: ProtocolContext, fields: dict[str, Any], error: str
) -> None:
    with pytest.raises(SessionError) as refused:
        plan(context, _body(HEART.name, **fields))
    answer = error_response(refused.value)
    assert answer.status_code == 400
    assert json.loads(bytes(answer.body))["error_code"] == error
