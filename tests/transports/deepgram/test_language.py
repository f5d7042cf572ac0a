"""Deepgram's language without I/O: its speak API has no language field; an Aura model name
carries one (``aura-2-thalia-en``, ``aura-2-izanami-ja``), which picks a voice that speaks it. A
model of a language no voice speaks is refused in Deepgram's shape before anything is spoken; a
voxflow voice name is taken as it is."""

from __future__ import annotations

import json

import pytest

from tests.support.language_voices import ALPHA, HEART, language_context, language_session
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.session.errors import SessionError
from voxflow.session.events import ErrorOut, OpenStream
from voxflow.transports.deepgram.errors import http_error
from voxflow.transports.deepgram.protocol import DeepgramProtocol
from voxflow.transports.deepgram.query import parse_speak_query


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return language_context()


@pytest.mark.parametrize(
    ("model", "voice", "language"),
    [
        ("aura-2-izanami-ja", ALPHA.name, "ja"),  # the first voice of that language
        ("aura-2-thalia-en", "joe", "en"),  # the default voice speaks it
        ("aura-asteria-en", "joe", "en"),
        (None, "joe", "en"),  # Deepgram's default model, aura-asteria-en
        (ALPHA.name, ALPHA.name, None),  # a voxflow voice, named
        (HEART.name, HEART.name, None),
    ],
)
def test_an_aura_models_language_picks_a_voice_that_speaks_it(
    context: ProtocolContext, model: str | None, voice: str, language: str | None
) -> None:
    query = {} if model is None else {"model": model}
    for websocket in (True, False):
        speech = parse_speak_query(context, query, websocket)
        assert (speech.voice, speech.language) == (voice, language)


def test_a_japanese_turn_opens_with_the_japanese_voice(context: ProtocolContext) -> None:
    session = language_session()
    options = parse_speak_query(context, {"model": "aura-2-izanami-ja"}, websocket=True)
    protocol = DeepgramProtocol(session, lambda: 0.0, options, 50_000)
    protocol.receive(json.dumps({"type": "Speak", "text": "こんにちは。"}))
    outputs = session.drain()
    assert not [o for o in outputs if isinstance(o, ErrorOut)]
    assert [o.voice for o in outputs if isinstance(o, OpenStream)] == [ALPHA.name]


@pytest.mark.parametrize("websocket", [True, False])
def test_a_model_of_a_language_no_voice_speaks_is_refused(
    context: ProtocolContext, websocket: bool
) -> None:
    with pytest.raises(SessionError) as refused:
        parse_speak_query(context, {"model": "aura-2-agustina-es"}, websocket)
    assert refused.value.code == "unsupported_language"
    assert "es" in refused.value.message and "ja_JP" in refused.value.message
    # Deepgram's shape: 400 with its query parameter error (the handshake's answer too).
    answer = http_error(refused.value.code, refused.value.message, "rid")
    assert answer.status == 400
    assert answer.body["err_code"] == "INVALID_QUERY_PARAMETER"
