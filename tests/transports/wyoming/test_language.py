"""Wyoming's ``voice.language`` without I/O: ``info`` lists each voice's language; a
``synthesize`` with a language alone picks a voice that speaks it, with a voice name the two must
agree; a mismatch, a language no voice speaks or a malformed one is an ``error`` event and
nothing is spoken; none behaves as before."""

from __future__ import annotations

import pytest

from tests.support.language_voices import ALPHA, HEART, language_context, language_session
from tests.support.wyoming_messages import (
    Describe,
    Error,
    Event,
    Info,
    SynthesizeStop,
)
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.session.events import ErrorOut, OpenStream
from voxflow.session.session import Session
from voxflow.transports.wyoming.protocol import WyomingProtocol


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return language_context()


def _protocol(context: ProtocolContext) -> tuple[Session, WyomingProtocol]:
    session = language_session()
    return session, WyomingProtocol(session, lambda: 0.0, context)


def _synthesize(voice: dict[str, str] | None, kind: str = "synthesize") -> Event:
    """The event as a client writes it. Built by hand: the wyoming package's ``SynthesizeVoice``
    leaves out a language given beside a name, which other clients may send."""
    data: dict[str, object] = {} if kind == "synthesize-start" else {"text": "Hi."}
    if voice is not None:
        data["voice"] = voice
    return Event(type=kind, data=data)


def test_info_lists_each_voices_language(context: ProtocolContext) -> None:
    _, protocol = _protocol(context)
    (answer,) = protocol.receive(Describe().event()).frames
    (program,) = Info.from_event(answer).tts
    languages = {voice.name: voice.languages for voice in program.voices}
    assert languages[ALPHA.name] == ["ja_JP"]
    assert languages[HEART.name] == ["en_US"]
    assert languages["joe"] == ["en_US"]


@pytest.mark.parametrize(
    ("voice", "opened"),
    [
        ({"language": "ja"}, ALPHA.name),  # the first voice of that language
        ({"language": "ja_JP"}, ALPHA.name),
        ({"language": "en-US"}, "joe"),  # the default voice speaks it
        ({"language": "en"}, "joe"),
        ({"name": ALPHA.name, "language": "ja"}, ALPHA.name),
        ({"name": HEART.name, "language": "en_US"}, HEART.name),
        ({"name": HEART.name}, HEART.name),  # no language: as before
        ({"name": HEART.name, "language": ""}, HEART.name),
        (None, "joe"),
    ],
)
def test_a_language_picks_or_agrees_with_the_voice(
    context: ProtocolContext, voice: dict[str, str] | None, opened: str
) -> None:
    session, protocol = _protocol(context)
    assert protocol.receive(_synthesize(voice)).frames == []
    outputs = session.drain()
    assert not [o for o in outputs if isinstance(o, ErrorOut)]
    assert [o.voice for o in outputs if isinstance(o, OpenStream)] == [opened]


@pytest.mark.parametrize(
    ("voice", "code"),
    [
        ({"name": HEART.name, "language": "ja"}, "unsupported_language"),
        ({"name": ALPHA.name, "language": "en_US"}, "unsupported_language"),
        ({"name": "joe", "language": "en_GB"}, "unsupported_language"),
        ({"language": "fr_FR"}, "unsupported_language"),  # no voice speaks it
        ({"language": "klingon!"}, "invalid_language"),
        ({"name": HEART.name, "language": "x" * 400}, "invalid_language"),
    ],
)
def test_a_mismatch_is_an_error_event_and_nothing_is_spoken(
    context: ProtocolContext, voice: dict[str, str], code: str
) -> None:
    session, protocol = _protocol(context)
    (error,) = protocol.receive(_synthesize(voice)).frames
    answer = Error.from_event(error)
    assert answer.code == code
    assert answer.text is not None and len(answer.text) < 300
    assert not [o for o in session.drain() if isinstance(o, OpenStream)]


def test_the_mismatch_says_what_the_voice_speaks(context: ProtocolContext) -> None:
    _, protocol = _protocol(context)
    voice = {"name": HEART.name, "language": "ja"}
    (error,) = protocol.receive(_synthesize(voice)).frames
    assert Error.from_event(error).text == "voice kokoro:af_heart speaks en_US, not ja"


def test_a_refused_stream_still_gets_synthesize_stopped(context: ProtocolContext) -> None:
    session, protocol = _protocol(context)
    voice = {"name": HEART.name, "language": "ja"}
    (error,) = protocol.receive(_synthesize(voice, "synthesize-start")).frames
    assert Error.from_event(error).code == "unsupported_language"
    (stopped,) = protocol.receive(SynthesizeStop().event()).frames
    assert stopped.type == "synthesize-stopped"
    assert not [o for o in session.drain() if isinstance(o, OpenStream)]
