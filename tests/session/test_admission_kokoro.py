"""Admission of Kokoro streams: one holds ``kokoro_slots`` slots of the server's cap (Piper's hold
one), gives them all back when it ends, and with ``kokoro_fallback_voice`` a Kokoro stream that
finds no room speaks with that voice instead of being refused. The real registry with the
installed Kokoro voices; no engine (a session only looks voices up)."""

from __future__ import annotations

import pytest

from voxflow.connection.local import drain_encoded
from voxflow.engines.kokoro.voices import default_voices_dir, find_packs
from voxflow.engines.registry import VoiceRegistry
from voxflow.session.admission import Admission, AdmissionSettings, Refusal
from voxflow.session.events import ErrorOut, OpenStream, Output
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session

KOKORO = "kokoro:af_heart"


@pytest.fixture(scope="module")
def registry() -> VoiceRegistry:
    voices = default_voices_dir()
    assert find_packs(voices), f"no Kokoro voices in {voices}: run make kokoro-voices"
    return VoiceRegistry(kokoro_dir=voices)


def _session(registry: VoiceRegistry, admission: Admission, fallback: str | None = None) -> Session:
    config = SessionConfig(default_voice="joe", kokoro_slots=2, kokoro_fallback_voice=fallback)
    return Session(config, registry.get, admission)


def _drain(session: Session) -> list[Output]:
    return list(drain_encoded(session, lambda: 1.0))


def _errors(outputs: list[Output]) -> list[ErrorOut]:
    return [o for o in outputs if isinstance(o, ErrorOut)]


def _opened(outputs: list[Output]) -> list[str]:
    return [o.voice for o in outputs if isinstance(o, OpenStream)]


def test_a_kokoro_stream_holds_two_slots_and_gives_both_back(registry: VoiceRegistry) -> None:
    refusals: list[Refusal] = []
    admission = Admission(AdmissionSettings(2), refusals.append)
    kokoro, piper = _session(registry, admission), _session(registry, admission)
    assert kokoro.start("k", StartOptions(voice=KOKORO), 0.0)
    assert _opened(_drain(kokoro)) == [KOKORO]
    assert admission.active == 2 and admission.saturated(0.0)
    # The cap is full: a Piper stream, which needs one slot, is refused.
    assert not piper.start("p", StartOptions(voice="joe"), 0.0)
    (refused,) = _errors(_drain(piper))
    assert (refused.code, refused.context_id) == ("concurrency_limited", "p")
    assert refused.retryable
    assert refusals == [Refusal.SATURATED]
    assert piper.open_contexts == 0
    # Closing the Kokoro stream frees both slots: two Piper streams fit again.
    kokoro.cancel("k", None, 1.0, 1.0)
    assert admission.active == 0
    assert piper.start("p1", StartOptions(voice="joe"), 1.0)
    assert piper.start("p2", StartOptions(voice="joe"), 1.0)
    assert not _errors(_drain(piper)) and admission.active == 2
    piper.close()
    assert admission.active == 0


def test_a_kokoro_stream_needs_both_slots_free(registry: VoiceRegistry) -> None:
    admission = Admission(AdmissionSettings(2))
    piper, kokoro = _session(registry, admission), _session(registry, admission)
    assert piper.start("p", StartOptions(voice="joe"), 0.0)
    assert admission.active == 1
    assert not kokoro.start("k", StartOptions(voice=KOKORO), 0.0)
    assert [e.code for e in _errors(_drain(kokoro))] == ["concurrency_limited"]
    assert admission.active == 1  # the refusal took nothing
    piper.close()
    kokoro.close()
    assert admission.active == 0


def test_a_blend_is_a_kokoro_stream_too(registry: VoiceRegistry) -> None:
    admission = Admission(AdmissionSettings(3))
    session = _session(registry, admission)
    assert session.start("k", StartOptions(voice="kokoro:af_heart*0.7+am_michael*0.3"), 0.0)
    assert _opened(_drain(session)) == ["kokoro:af_heart*0.7+am_michael*0.3"]
    assert admission.active == 2
    session.close()
    assert admission.active == 0


def test_a_cap_below_the_kokoro_slots_admits_one_kokoro_stream_alone(
    registry: VoiceRegistry,
) -> None:
    admission = Admission(AdmissionSettings(1))
    session = _session(registry, admission)
    assert session.start("k", StartOptions(voice=KOKORO), 0.0)  # holds the whole cap
    assert admission.active == 1
    assert not session.start("p", StartOptions(voice="joe"), 0.0)
    session.close()
    assert admission.active == 0


def test_the_fallback_voice_speaks_when_a_kokoro_stream_finds_no_room(
    registry: VoiceRegistry,
) -> None:
    refusals: list[Refusal] = []
    admission = Admission(AdmissionSettings(2), refusals.append)
    other = _session(registry, admission)
    session = _session(registry, admission, fallback="joe")
    assert other.start("p", StartOptions(voice="joe"), 0.0)  # one slot left: Kokoro needs two
    assert session.start("k", StartOptions(voice=KOKORO), 0.0)
    outputs = _drain(session)
    assert not _errors(outputs)
    assert _opened(outputs) == ["joe"]  # the stream speaks with joe, on one slot
    assert admission.active == 2
    # With room again, the same session's next Kokoro stream speaks Kokoro.
    session.cancel("k", None, 1.0, 1.0)
    other.close()
    assert admission.active == 0
    assert session.start("k2", StartOptions(voice=KOKORO), 1.0)
    assert _opened(_drain(session)) == [KOKORO]
    assert admission.active == 2
    session.close()
    assert admission.active == 0


def test_without_room_even_for_the_fallback_the_stream_is_refused(
    registry: VoiceRegistry,
) -> None:
    admission = Admission(AdmissionSettings(2))
    other = _session(registry, admission)
    session = _session(registry, admission, fallback="joe")
    assert other.start("a", StartOptions(voice="joe"), 0.0)
    assert other.start("b", StartOptions(voice="joe"), 0.0)
    assert not session.start("k", StartOptions(voice=KOKORO), 0.0)
    assert [e.code for e in _errors(_drain(session))] == ["concurrency_limited"]
    assert session.open_contexts == 0 and admission.active == 2
    other.close()
    assert admission.active == 0


def test_the_fallback_is_only_for_kokoro_streams(registry: VoiceRegistry) -> None:
    admission = Admission(AdmissionSettings(1))
    other = _session(registry, admission)
    session = _session(registry, admission, fallback="joe")
    assert other.start("a", StartOptions(voice="joe"), 0.0)
    assert not session.start("p", StartOptions(voice="joe"), 0.0)  # a Piper stream: refused
    assert [e.code for e in _errors(_drain(session))] == ["concurrency_limited"]
    other.close()
    assert admission.active == 0


def test_a_stream_admitted_with_the_fallback_voice_is_not_counted_as_refused(
    registry: VoiceRegistry,
) -> None:
    refusals: list[Refusal] = []
    admission = Admission(AdmissionSettings(2), refusals.append)
    other = _session(registry, admission)
    session = _session(registry, admission, fallback="joe")
    assert other.start("p", StartOptions(voice="joe"), 0.0)
    assert session.start("k", StartOptions(voice=KOKORO), 0.0)
    assert _opened(_drain(session)) == ["joe"]
    try:
        assert refusals == []
    finally:
        session.close()
        other.close()


def test_a_kokoro_fallback_voice_still_needs_the_kokoro_slots(registry: VoiceRegistry) -> None:
    admission = Admission(AdmissionSettings(2))
    other = _session(registry, admission)
    session = _session(registry, admission, fallback="kokoro:af_bella")
    assert other.start("p", StartOptions(voice="joe"), 0.0)  # one slot left
    try:
        assert not session.start("k", StartOptions(voice=KOKORO), 0.0)
        assert [e.code for e in _errors(_drain(session))] == ["concurrency_limited"]
    finally:
        session.close()
        other.close()
