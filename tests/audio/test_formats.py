from __future__ import annotations

import pytest

from voxflow.audio.formats import (
    SUPPORTED_FORMATS,
    Codec,
    OutputFormat,
    UnsupportedFormatError,
    parse_output_format,
)

EXPECTED = {
    "pcm_8000": (Codec.PCM, 8000),
    "pcm_16000": (Codec.PCM, 16000),
    "pcm_22050": (Codec.PCM, 22050),
    "pcm_24000": (Codec.PCM, 24000),
    "pcm_44100": (Codec.PCM, 44100),
    "pcm_48000": (Codec.PCM, 48000),
    "ulaw_8000": (Codec.ULAW, 8000),
    "alaw_8000": (Codec.ALAW, 8000),
}


def test_supported_formats_are_exactly_the_documented_set() -> None:
    assert set(SUPPORTED_FORMATS) == set(EXPECTED)
    assert len(SUPPORTED_FORMATS) == len(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_supported_name_parses(name: str) -> None:
    fmt = parse_output_format(name)
    codec, rate = EXPECTED[name]
    assert fmt == OutputFormat(name, codec, rate)
    assert fmt.bytes_per_sample == (2 if codec is Codec.PCM else 1)


def test_parsing_tolerates_case_and_whitespace() -> None:
    assert parse_output_format("  PCM_24000 ").name == "pcm_24000"


@pytest.mark.parametrize(
    "name", ["", "pcm", "pcm_12345", "ulaw_16000", "wav_22050", "pcm-16000", "garbage!", "8000"]
)
def test_unknown_names_list_supported_formats(name: str) -> None:
    with pytest.raises(UnsupportedFormatError) as excinfo:
        parse_output_format(name)
    message = str(excinfo.value)
    assert repr(name) in message
    for supported in SUPPORTED_FORMATS:
        assert supported in message


@pytest.mark.parametrize("name", ["mp3_44100_128", "opus_48000_64", "MP3_22050_32"])
def test_compressed_formats_are_announced_as_coming_later(name: str) -> None:
    with pytest.raises(UnsupportedFormatError, match="later") as excinfo:
        parse_output_format(name)
    assert "pcm_24000" in str(excinfo.value)


def test_unsupported_format_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="supported formats"):
        parse_output_format("flac_44100")


@pytest.mark.parametrize(
    ("name", "num_bytes", "expected_ms"),
    [
        ("pcm_16000", 32000, 1000.0),
        ("pcm_24000", 480, 10.0),
        ("pcm_22050", 441, 10.0),
        ("pcm_44100", 0, 0.0),
        ("ulaw_8000", 160, 20.0),
        ("alaw_8000", 8000, 1000.0),
        ("pcm_48000", 96, 1.0),
    ],
)
def test_duration_ms(name: str, num_bytes: int, expected_ms: float) -> None:
    assert parse_output_format(name).duration_ms(num_bytes) == pytest.approx(expected_ms)


def test_duration_rejects_negative_sizes() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        parse_output_format("pcm_8000").duration_ms(-2)


def test_output_format_is_immutable() -> None:
    fmt = parse_output_format("pcm_8000")
    with pytest.raises(AttributeError):
        fmt.sample_rate = 16000  # type: ignore[misc]
