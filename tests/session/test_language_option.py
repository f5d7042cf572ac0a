"""A request's ``language``, checked once for every protocol against its voice
(``voxflow.session.options.check_language``, run by ``context_options``); and the Kokoro fallback
voice, which never speaks a stream of another language."""

from __future__ import annotations

import pytest

from tests.support.language_voices import fake_voice
from voxflow.engines.base import VoiceInfo, VoiceNotFoundError
from voxflow.session.admission import Admission, AdmissionSettings
from voxflow.session.errors import SessionError
from voxflow.session.events import ErrorOut, OpenStream
from voxflow.session.options import (
    SessionConfig,
    StartOptions,
    check_language,
    context_options,
)
from voxflow.session.session import Session

HEART = fake_voice("kokoro:af_heart", "en_US", "kokoro")
GEORGE = fake_voice("kokoro:bm_george", "en_GB", "kokoro")
ALPHA = fake_voice("kokoro:jf_alpha", "ja_JP", "kokoro")
JOE = fake_voice("joe", "en_US", "piper")
ODD = fake_voice("odd", "", "piper")  # a voice whose locale is no language code
VOICES = {v.name: v for v in (HEART, GEORGE, ALPHA, JOE, ODD)}


def lookup(name: str) -> VoiceInfo:
    try:
        return VOICES[name]
    except KeyError:
        raise VoiceNotFoundError(name, sorted(VOICES)) from None


def _refused(code: str) -> pytest.RaisesExc[SessionError]:
    return pytest.raises(SessionError, check=lambda e: e.code == code)


@pytest.mark.parametrize(
    ("voice", "language"),
    [
        (ALPHA, "ja"),
        (ALPHA, "ja-JP"),
        (ALPHA, "ja_JP"),
        (ALPHA, "JA"),
        (HEART, "en"),
        (HEART, "en-US"),
        (HEART, "en_us"),
        (GEORGE, "en"),
        (GEORGE, "en-GB"),
        (HEART, None),  # no language: the voice's own, as before
        (ODD, None),
    ],
)
def test_a_language_the_voice_speaks_passes(voice: VoiceInfo, language: str | None) -> None:
    check_language(voice, language)


@pytest.mark.parametrize(
    ("voice", "language"),
    [
        (HEART, "ja"),
        (ALPHA, "en"),
        (HEART, "en-GB"),  # both name a region, and they differ
        (GEORGE, "en_US"),
        (HEART, "fr"),
        (ODD, "en"),  # a voice with no readable locale speaks nothing a client can name
    ],
)
def test_a_language_the_voice_does_not_speak_is_unsupported(
    voice: VoiceInfo, language: str
) -> None:
    with _refused("unsupported_language") as caught:
        check_language(voice, language)
    assert voice.name in caught.value.message
    assert language in caught.value.message


def test_the_mismatch_says_what_the_voice_speaks() -> None:
    with _refused("unsupported_language") as caught:
        check_language(HEART, "ja")
    assert caught.value.message == "voice kokoro:af_heart speaks en_US, not ja"
    assert caught.value.retryable is False


@pytest.mark.parametrize(
    "language",
    ["", " ", "japanese", "j", "ja-", "ja_JP_x", "en-USA", "日本語", "ja\x00", "x" * 300, "1a"],
)
def test_a_value_that_is_no_language_code_is_invalid(language: str) -> None:
    with _refused("invalid_language") as caught:
        check_language(HEART, language)
    assert len(caught.value.message) < 200  # the value is shown bounded


def test_context_options_check_the_language_against_the_resolved_voice() -> None:
    config = SessionConfig(default_voice="joe")
    assert context_options(config, StartOptions(voice=ALPHA.name, language="ja"), lookup)
    # No voice named: the default voice's language is the one checked.
    assert context_options(config, StartOptions(language="en-US"), lookup).voice == "joe"
    with _refused("unsupported_language"):
        context_options(config, StartOptions(language="ja"), lookup)
    with _refused("unsupported_language"):
        context_options(config, StartOptions(voice=HEART.name, language="ja"), lookup)
    with _refused("invalid_language"):
        context_options(config, StartOptions(voice=ALPHA.name, language="nope!"), lookup)
    # An unknown voice is that, whatever the language.
    with _refused("unknown_voice"):
        context_options(config, StartOptions(voice="nobody", language="ja"), lookup)


def test_a_mismatched_context_never_opens_and_nothing_is_spoken() -> None:
    session = Session(SessionConfig(default_voice="joe"), lookup)
    assert not session.start("a", StartOptions(voice=HEART.name, language="ja"), 0.0)
    session.request("b", StartOptions(voice=HEART.name, language="ja"), "Hello.", 0.0)
    outputs = session.drain()
    assert not [o for o in outputs if isinstance(o, OpenStream)]
    errors = [o for o in outputs if isinstance(o, ErrorOut)]
    assert [(e.context_id, e.code) for e in errors] == [
        ("a", "unsupported_language"),
        ("b", "unsupported_language"),
    ]
    assert session.open_contexts == 0


# -- the Kokoro fallback voice (``SessionConfig.kokoro_fallback_voice``) --------------------------


def _full_server_session(fallback: str) -> tuple[Session, Session]:
    """A session whose Kokoro streams find no room (one slot left of two), with ``fallback``."""
    admission = Admission(AdmissionSettings(2))
    config = SessionConfig(default_voice="joe", kokoro_slots=2, kokoro_fallback_voice=fallback)
    other = Session(config, lookup, admission)
    assert other.start("p", StartOptions(voice="joe"), 0.0)
    return Session(config, lookup, admission), other


def _opened(session: Session) -> list[str]:
    outputs = session.drain()
    return [o.voice for o in outputs if isinstance(o, OpenStream)] + [
        o.code for o in outputs if isinstance(o, ErrorOut)
    ]


def test_the_fallback_speaks_only_streams_of_its_own_language() -> None:
    session, other = _full_server_session(fallback="joe")
    try:
        # English (a British voice too) falls back to joe, as before.
        assert session.start("a", StartOptions(voice=GEORGE.name), 0.0)
        assert _opened(session) == ["joe"]
        session.cancel("a", None, 0.0, 0.0)
        # A Japanese stream is refused rather than read by an English voice.
        assert not session.start("b", StartOptions(voice=ALPHA.name, language="ja"), 0.0)
        assert _opened(session) == ["concurrency_limited"]
        assert not session.start("c", StartOptions(voice=ALPHA.name), 0.0)
        assert _opened(session) == ["concurrency_limited"]
        # A request for British English is not spoken by an American fallback either.
        assert not session.start("d", StartOptions(voice=GEORGE.name, language="en-GB"), 0.0)
        assert _opened(session) == ["concurrency_limited"]
    finally:
        session.close()
        other.close()
