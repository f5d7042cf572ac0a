"""Option validation and voice lookup, once for every protocol (``voxflow.session.options``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from voxflow.audio.formats import openai_output_format
from voxflow.engines.base import VoiceInfo, VoiceNotFoundError, VoiceSettings
from voxflow.session.errors import SessionError
from voxflow.session.events import ErrorOut, OpenStream
from voxflow.session.options import (
    MAX_NAME_CHARS,
    MAX_SEED,
    SessionConfig,
    StartOptions,
    check_name,
    check_speaker,
    check_text,
    clean_text,
    context_options,
    finite_number,
    normalization_mode,
    output_format,
    resolve_voice,
    shown,
    text_format,
    voice_settings,
)
from voxflow.session.session import Session
from voxflow.text.chunking import ChunkingConfig
from voxflow.text.normalize.normalizer import NormalizationMode
from voxflow.text.ssml import SSML


def _voice(name: str, speakers: int = 1, rate: int = 22050) -> VoiceInfo:
    return VoiceInfo(
        name=name,
        language="en_US",
        sample_rate=rate,
        source="test",
        model_path=Path(f"{name}.onnx"),
        config_path=Path(f"{name}.onnx.json"),
        num_speakers=speakers,
        speakers=tuple(f"s{i}" for i in range(speakers)) if speakers > 1 else (),
    )


VOICES = {v.name: v for v in (_voice("joe"), _voice("duo", speakers=2, rate=16000))}


def lookup(name: str) -> VoiceInfo:
    try:
        return VOICES[name]
    except KeyError:
        raise VoiceNotFoundError(name, sorted(VOICES)) from None


def _refused(code: str) -> pytest.RaisesExc[SessionError]:
    return pytest.raises(SessionError, check=lambda e: e.code == code)


# -- voices ---------------------------------------------------------------------------------------


def test_a_voice_name_selects_that_voice_and_none_the_default() -> None:
    assert resolve_voice(lookup, "duo", "joe").name == "duo"
    assert resolve_voice(lookup, None, "joe").name == "joe"
    assert resolve_voice(lookup, "", "duo").name == "duo"


def test_an_alias_selects_the_default_voice_and_anything_else_is_unknown() -> None:
    def alias(name: str) -> bool:
        return name == "alloy"

    assert resolve_voice(lookup, "alloy", "duo", alias=alias).name == "duo"
    with _refused("unknown_voice") as caught:
        resolve_voice(lookup, "nobody", "joe", alias=alias, hint="OpenAI names work too")
    assert caught.value.message == (
        "unknown voice 'nobody'; available: duo, joe; OpenAI names work too"
    )
    assert caught.value.retryable is False
    # Without an alias predicate an alias-looking name is unknown too.
    with _refused("unknown_voice"):
        resolve_voice(lookup, "alloy", "joe")


def test_speakers_must_be_the_voices_own() -> None:
    check_speaker(VOICES["joe"], None)
    check_speaker(VOICES["joe"], 0)
    check_speaker(VOICES["duo"], 1)
    with _refused("unknown_speaker") as caught:
        check_speaker(VOICES["joe"], 3)
    assert "single speaker" in caught.value.message
    with _refused("unknown_speaker") as caught:
        check_speaker(VOICES["duo"], 2)
    assert "2 speakers" in caught.value.message


# -- formats, normalization, settings, text -------------------------------------------------------


def test_output_formats_by_each_protocols_names() -> None:
    assert output_format("pcm_16000").name == "pcm_16000"
    assert output_format("pcm", openai_output_format).name == "pcm_24000"
    with _refused("unsupported_format") as caught:
        output_format("mp3_44100_999")
    assert "mp3_44100_999" in caught.value.message
    with _refused("unsupported_format"):
        output_format("ogg", openai_output_format)
    with _refused("unsupported_format"):
        output_format("pcm")  # an OpenAI name is not an ElevenLabs-style one


def test_normalization_modes() -> None:
    assert normalization_mode(None) is NormalizationMode.AUTO
    assert normalization_mode("ON") is NormalizationMode.ON
    assert normalization_mode("off") is NormalizationMode.OFF
    with _refused("invalid_normalization") as caught:
        normalization_mode("maybe")
    assert "'maybe'" in caught.value.message


def test_voice_settings_in_range_and_out() -> None:
    assert voice_settings() == VoiceSettings()
    assert voice_settings(speed=1.5, seed=MAX_SEED, speaker_id=1) == VoiceSettings(
        speed=1.5, seed=MAX_SEED, speaker_id=1
    )
    for bad in (
        {"speed": 9.0},
        {"speed": 0.0},
        {"noise_scale": 3.0},
        {"noise_w": -1.0},
        {"seed": -1},
        {"seed": MAX_SEED + 1},
        {"speaker_id": -1},
        # What a protocol that skipped its own checks could pass: never a number here.
        {"speed": float("nan")},
        {"speed": float("inf")},
        {"noise_scale": float("nan")},
        {"noise_w": float("-inf")},
        {"speed": True},
        {"seed": True},
        {"seed": 1.0},
        {"speaker_id": False},
    ):
        with _refused("invalid_voice_settings"):
            voice_settings(**bad)


def test_text_length() -> None:
    check_text("x" * 10, 10)
    with _refused("text_too_long") as caught:
        check_text("x" * 11, 10)
    assert "at most 10" in caught.value.message and "got 11" in caught.value.message


def test_control_characters_in_text_become_spaces_one_for_one() -> None:
    text = "a\x00b\x07c\x1bd\x7fe\x85f\x9fg"
    assert clean_text(text) == "a b c d e f g"
    assert len(clean_text(text)) == len(text)  # offsets into the client's text still hold
    # Tab and line breaks are text; so is everything printable, emoji (a pair) included.
    kept = "Tab\there,\nnew line\r\n. Ünïcode \U0001f600 \u2028 \ufeff"
    assert clean_text(kept) == kept


def test_a_lone_surrogate_in_text_is_refused() -> None:
    for text in ("a\ud800b", "\udfff", "\udc00\ud800"):
        with _refused("invalid_message") as caught:
            clean_text(text)
        assert "surrogate" in caught.value.message
        caught.value.message.encode("utf-8")  # safe to send back


def test_names_are_short_and_printable_or_refused() -> None:
    assert check_name("joe", "voice name", "unknown_voice") == "joe"
    assert check_name("x" * MAX_NAME_CHARS, "context_id", "invalid_message")
    for bad in ("x" * (MAX_NAME_CHARS + 1), "a\x00", "tab\there", "new\nline", "\x85", "\ud800"):
        with _refused("invalid_message") as caught:
            check_name(bad, "context_id", "invalid_message")
        assert len(caught.value.message) < 200
        caught.value.message.encode("utf-8")
    # Through the voice lookup, a bad name is an unknown voice that says why.
    with _refused("unknown_voice") as voice:
        resolve_voice(lookup, "jo\x00e", "joe")
    assert "control characters" in voice.value.message
    with _refused("unsupported_format"):
        output_format("pcm_24000" * 100)


def test_finite_numbers_only() -> None:
    assert finite_number(None, "speed") is None
    assert finite_number(2, "speed") == 2.0 and finite_number(0.5, "speed") == 0.5
    for bad in (float("nan"), float("inf"), float("-inf"), True, False, "1", [1], {"a": 1}):
        with _refused("invalid_message"):
            finite_number(bad, "speed")
    # An integer too large for a float: refused, not an OverflowError.
    with _refused("invalid_voice_settings") as caught:
        finite_number(10**400, "voice_settings.speed", "invalid_voice_settings")
    assert caught.value.message == "voice_settings.speed is out of range"


def test_shown_values_are_short_and_safe() -> None:
    assert shown("joe") == "'joe'" and shown(1.5) == "1.5" and shown(None) == "None"
    assert len(shown("x" * 10_000)) <= 60 and shown("x" * 10_000).endswith("...")
    assert shown("a\x00\ud800") == "'a\\x00\\ud800'"  # escaped: encodes as UTF-8
    assert shown(10**4000) == "a very large integer"
    deep: object = 1
    for _ in range(100_000):
        deep = [deep]
    assert shown(deep) == "a list" and shown({"a": deep}) == "an object"


# -- a context's options --------------------------------------------------------------------------


def test_context_options_fill_in_the_session_defaults() -> None:
    config = SessionConfig(default_voice="duo", default_format="pcm_8000")
    resolved = context_options(config, StartOptions(), lookup)
    assert resolved.voice == "duo" and resolved.source_rate == 16000
    assert resolved.output_format.name == "pcm_8000"
    assert resolved.chunking == config.chunking


def test_a_decoder_that_reads_ahead_gets_a_longer_lead() -> None:
    config = SessionConfig(default_voice="joe", chunking=ChunkingConfig(lead_cost=(18, 32)))
    pcm = context_options(config, StartOptions(output_format="pcm_24000"), lookup)
    mp3 = context_options(config, StartOptions(output_format="mp3_44100_128"), lookup)
    assert pcm.chunking.lead_cost == (18, 32)
    assert mp3.chunking.lead_cost is not None and mp3.chunking.lead_cost[0] > 18


@pytest.mark.parametrize(
    ("options", "code"),
    [
        (StartOptions(voice="nobody"), "unknown_voice"),
        (StartOptions(settings=VoiceSettings(speaker_id=3)), "unknown_speaker"),
        (StartOptions(output_format="vorbis_44100"), "unsupported_format"),
        (StartOptions(chunk_length_schedule=(0,)), "invalid_message"),
    ],
)
def test_context_options_refuse(options: StartOptions, code: str) -> None:
    with _refused(code):
        context_options(SessionConfig(default_voice="joe"), options, lookup)


def test_the_session_opens_nothing_on_a_refused_option() -> None:
    session = Session(SessionConfig(default_voice="joe"), lookup)
    session.start("a", StartOptions(settings=VoiceSettings(speaker_id=3)), 0.0)
    (error,) = session.drain()
    assert isinstance(error, ErrorOut) and error.code == "unknown_speaker"
    assert session.open_contexts == 0
    session.start("a", StartOptions(voice="duo", settings=VoiceSettings(speaker_id=1)), 0.0)
    assert [type(o) for o in session.drain()] == [OpenStream]


def test_a_text_format_is_text_or_ssml() -> None:
    assert text_format(None) is None and text_format("text") is None
    assert text_format("ssml") is SSML
    for bad in ("SSML", "markdown", 1):
        with pytest.raises(SessionError, match="'text' or 'ssml', got") as raised:
            text_format(bad)
        assert raised.value.code == "unsupported_text_format"
