"""ElevenLabs' ``language_code`` without I/O: the WebSocket's query string and the HTTP body,
checked against the voice (a match speaks, a mismatch or a malformed code is refused in
ElevenLabs' shape before anything is spoken, none behaves as before); and ``GET /v1/models`` in
ElevenLabs' shape, with the languages of the voices."""

from __future__ import annotations

import json

import pytest

from tests.support.language_voices import ALPHA, HEART, language_context, language_session
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.session.errors import SessionError
from voxflow.session.events import ErrorOut, OpenStream, Output
from voxflow.session.session import Session
from voxflow.transports.elevenlabs.http import SpeechBody, error_response, plan
from voxflow.transports.elevenlabs.models import MODELS, from_elevenlabs, model_list
from voxflow.transports.elevenlabs.protocol import ElevenLabsProtocol
from voxflow.transports.languages import SpokenLanguage


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return language_context()


def _connect(
    context: ProtocolContext, voice_id: str, query: dict[str, str]
) -> tuple[Session, ElevenLabsProtocol]:
    session = language_session()
    query = {"output_format": "pcm_24000", **query}
    return session, ElevenLabsProtocol(session, lambda: 0.0, context, voice_id, query, False)


def _opened(outputs: list[Output]) -> list[str]:
    return [o.voice for o in outputs if isinstance(o, OpenStream)]


@pytest.mark.parametrize(
    ("voice", "query"),
    [
        (ALPHA.name, {"language_code": "ja"}),
        (HEART.name, {"language_code": "en"}),
        (HEART.name, {"language_code": "en-US"}),
        (HEART.name, {}),  # none: as before
        (HEART.name, {"language_code": ""}),  # an empty query value is none too
    ],
)
def test_a_language_the_voice_speaks_streams(
    context: ProtocolContext, voice: str, query: dict[str, str]
) -> None:
    session, protocol = _connect(context, voice, query)
    assert protocol.options is not None
    assert protocol.options.language == (query.get("language_code") or None)
    protocol.receive(json.dumps({"text": "Hello. "}))
    outputs = session.drain()
    assert not [o for o in outputs if isinstance(o, ErrorOut)]
    assert _opened(outputs) == [voice]


@pytest.mark.parametrize(
    ("voice", "language", "error"),
    [
        (HEART.name, "ja", "unsupported_language"),
        (ALPHA.name, "en", "unsupported_language"),
        (HEART.name, "en-GB", "unsupported_language"),
        (HEART.name, "japanese!", "invalid_language"),
        (HEART.name, "ja\x00", "invalid_language"),
    ],
)
def test_a_mismatch_fails_the_connection_before_any_text(
    context: ProtocolContext, voice: str, language: str, error: str
) -> None:
    session, protocol = _connect(context, voice, {"language_code": language})
    assert protocol.options is None
    protocol.receive(json.dumps({"text": "Hello. "}))  # read no further: nothing opens
    outputs = session.drain()
    assert _opened(outputs) == []
    (refusal,) = [o for o in outputs if isinstance(o, ErrorOut)]
    reply = protocol.reply(refusal)
    (frame,) = reply.frames
    assert json.loads(frame) == {"message": refusal.message, "error": error, "code": 1008}
    assert reply.close is not None and reply.close.code == 1008


def test_the_mismatch_message_names_the_voice_and_both_languages(
    context: ProtocolContext,
) -> None:
    session, _ = _connect(context, HEART.name, {"language_code": "ja"})
    (refusal,) = [o for o in session.drain() if isinstance(o, ErrorOut)]
    assert refusal.message == "voice kokoro:af_heart speaks en_US, not ja"


# -- HTTP -----------------------------------------------------------------------------------------


def _body(**fields: object) -> SpeechBody:
    return SpeechBody.model_validate(json.dumps({"text": "Hello.", **fields}).encode())


@pytest.mark.parametrize(
    ("voice", "language"),
    [
        (ALPHA.name, "ja"),
        (ALPHA.name, "ja-JP"),
        (HEART.name, "en"),
        (HEART.name, None),
        (HEART.name, ""),  # empty is none, as in the query string
    ],
)
def test_http_a_language_the_voice_speaks_is_planned(
    context: ProtocolContext, voice: str, language: str | None
) -> None:
    checked = plan(context, voice, _body(language_code=language), "pcm_24000")
    assert (checked.voice, checked.language) == (voice, language or None)


@pytest.mark.parametrize(
    ("voice", "language", "status", "error"),
    [
        (HEART.name, "ja", 400, "unsupported_language"),
        (ALPHA.name, "en-US", 400, "unsupported_language"),
        (HEART.name, "12", 400, "invalid_language"),
        ("nobody", "ja", 404, "voice_not_found"),  # the voice first
    ],
)
def test_http_a_mismatch_is_elevenlabs_400(
    context: ProtocolContext, voice: str, language: str, status: int, error: str
) -> None:
    with pytest.raises(SessionError) as refused:
        plan(context, voice, _body(language_code=language), "pcm_24000")
    answer = error_response(refused.value)
    assert answer.status_code == status
    assert json.loads(bytes(answer.body))["detail"]["status"] == error


def test_http_a_language_code_of_the_wrong_type_is_refused(context: ProtocolContext) -> None:
    with pytest.raises(SessionError) as refused:
        plan(context, HEART.name, _body(language_code=7), "pcm_24000")
    assert refused.value.code == "invalid_request"


# -- GET /v1/models ---------------------------------------------------------------------------


def test_models_list_the_voices_languages_as_elevenlabs_does() -> None:
    languages = (SpokenLanguage("en", "English"), SpokenLanguage("ja", "Japanese"))
    models = model_list(languages, 10_000)
    assert [m["model_id"] for m in models] == [model_id for model_id, _ in MODELS]
    for model in models:
        assert model["languages"] == [
            {"language_id": "en", "name": "English"},
            {"language_id": "ja", "name": "Japanese"},
        ]
        assert model["can_do_text_to_speech"] is True
        assert model["maximum_text_length_per_request"] == 10_000


def test_elevenlabs_clients_are_told_by_their_headers() -> None:
    assert from_elevenlabs({"xi-api-key": "k"})
    assert from_elevenlabs({"x-fern-sdk-name": "elevenlabs"})
    assert from_elevenlabs({"x-fern-sdk-name": "@elevenlabs/elevenlabs-js"})
    assert not from_elevenlabs({"authorization": "Bearer k"})  # OpenAI's
    assert not from_elevenlabs({"x-fern-sdk-name": "cartesia"})
