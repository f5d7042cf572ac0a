"""The native ``start``'s ``language`` without I/O: checked against the voice when the context
opens; a mismatch is an ``error`` event (``unsupported_language``) and the context never opens, a
malformed code is ``invalid_message`` (the native protocol's code for a bad field), none behaves
as before."""

from __future__ import annotations

import json

import pytest

from tests.support.language_voices import ALPHA, HEART, language_session
from voxflow.client.messages import start_message
from voxflow.session.events import ErrorOut, OpenStream, Output
from voxflow.transports.native.protocol import (
    MAX_REFUSED,
    NativeProtocol,
    encode_event,
    parse_start,
)


def _start(**fields: object) -> list[Output]:
    session = language_session()
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    protocol.receive(json.dumps({"type": "start", "context_id": "a", **fields}))
    return session.drain()


@pytest.mark.parametrize(
    "fields",
    [
        {"voice": ALPHA.name, "language": "ja"},
        {"voice": ALPHA.name, "language": "ja-JP"},
        {"voice": HEART.name, "language": "en"},
        {"voice": HEART.name},  # none: as before
        {"language": "en-US"},  # the default voice (joe, en_US)
    ],
)
def test_a_language_the_voice_speaks_opens_the_context(fields: dict[str, object]) -> None:
    outputs = _start(**fields)
    assert not [o for o in outputs if isinstance(o, ErrorOut)]
    assert [o.voice for o in outputs if isinstance(o, OpenStream)] == [fields.get("voice", "joe")]


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"voice": HEART.name, "language": "ja"}, "unsupported_language"),
        ({"voice": ALPHA.name, "language": "en"}, "unsupported_language"),
        ({"language": "ja"}, "unsupported_language"),  # the default voice speaks English
        ({"voice": HEART.name, "language": "english"}, "invalid_message"),
        ({"voice": HEART.name, "language": 7}, "invalid_message"),
    ],
)
def test_a_mismatch_is_an_error_event_and_nothing_opens(
    fields: dict[str, object], code: str
) -> None:
    outputs = _start(**fields)
    assert not [o for o in outputs if isinstance(o, OpenStream)]
    (error,) = [o for o in outputs if isinstance(o, ErrorOut)]
    body = json.loads(encode_event(error, binary=False)[0])
    assert body["type"] == "error" and body["context_id"] == "a"
    assert body["code"] == code and body["retryable"] is False


def test_the_mismatch_message_says_what_the_voice_speaks() -> None:
    (error,) = [o for o in _start(voice=HEART.name, language="ja") if isinstance(o, ErrorOut)]
    assert error.code == "unsupported_language"
    assert error.message == "voice kokoro:af_heart speaks en_US, not ja"


def test_the_clients_start_carries_the_language_the_server_reads() -> None:
    assert parse_start(start_message("a", voice=ALPHA.name, language="ja")).language == "ja"
    assert "language" not in start_message("a")
    assert parse_start(start_message("a")).language is None


def test_text_for_a_refused_start_is_refused_not_spoken_by_the_defaults() -> None:
    """Without a start, ``text`` opens a context with the server's defaults: after a refused
    start, that would speak the Japanese text with the default English voice."""
    session = language_session()
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    protocol.receive(json.dumps({"type": "start", "context_id": "a", "language": "ja"}))
    for kind in ("text", "flush", "end"):
        protocol.receive(json.dumps({"type": kind, "context_id": "a", "text": "こんにちは。"}))
    outputs = session.drain()
    assert not [o for o in outputs if isinstance(o, OpenStream)]
    codes = [o.code for o in outputs if isinstance(o, ErrorOut)]
    assert codes == ["unsupported_language"] + ["unknown_context"] * 3
    # A new start of the id forgets the refusal; other ids never had one.
    protocol.receive(json.dumps({"type": "start", "context_id": "a", "voice": ALPHA.name}))
    protocol.receive(json.dumps({"type": "text", "context_id": "a", "text": "はい。"}))
    protocol.receive(json.dumps({"type": "text", "context_id": "b", "text": "Hi."}))
    outputs = session.drain()
    assert not [o for o in outputs if isinstance(o, ErrorOut)]
    assert [o.voice for o in outputs if isinstance(o, OpenStream)] == [ALPHA.name, "joe"]


def test_a_connection_remembers_a_bounded_number_of_refused_starts() -> None:
    session = language_session()
    protocol = NativeProtocol(session, lambda: 0.0, binary=False)
    for n in range(MAX_REFUSED + 10):
        protocol.receive(json.dumps({"type": "start", "context_id": f"c{n}", "language": "xx"}))
    session.drain()
    protocol.receive(json.dumps({"type": "text", "context_id": "c0", "text": "Hi."}))
    protocol.receive(json.dumps({"type": "text", "context_id": "c69", "text": "Hi."}))
    outputs = session.drain()
    # The oldest refusal is forgotten (its text opens a context as any unknown id's does).
    assert [o.code for o in outputs if isinstance(o, ErrorOut)] == ["unknown_context"]
