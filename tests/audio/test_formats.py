from __future__ import annotations

import pytest

from voxflow.audio.formats import (
    OPENAI_RESPONSE_FORMATS,
    SUPPORTED_FORMATS,
    Codec,
    OutputFormat,
    UnsupportedFormatError,
    openai_output_format,
    parse_output_format,
)

PCM_RATES = (8000, 16000, 22050, 24000, 44100, 48000)
EXPECTED: dict[str, tuple[Codec, int, int | None]] = {
    **{f"pcm_{rate}": (Codec.PCM, rate, None) for rate in PCM_RATES},
    "ulaw_8000": (Codec.ULAW, 8000, None),
    "alaw_8000": (Codec.ALAW, 8000, None),
    **{f"wav_{rate}": (Codec.WAV, rate, None) for rate in PCM_RATES},
    **{f"flac_{rate}": (Codec.FLAC, rate, None) for rate in PCM_RATES},
    "mp3_22050_32": (Codec.MP3, 22050, 32),
    "mp3_24000_48": (Codec.MP3, 24000, 48),
    "mp3_44100_32": (Codec.MP3, 44100, 32),
    "mp3_44100_64": (Codec.MP3, 44100, 64),
    "mp3_44100_96": (Codec.MP3, 44100, 96),
    "mp3_44100_128": (Codec.MP3, 44100, 128),
    "mp3_44100_192": (Codec.MP3, 44100, 192),
    "opus_48000_32": (Codec.OPUS, 48000, 32),
    "opus_48000_64": (Codec.OPUS, 48000, 64),
    "opus_48000_96": (Codec.OPUS, 48000, 96),
    "opus_48000_128": (Codec.OPUS, 48000, 128),
    "opus_48000_192": (Codec.OPUS, 48000, 192),
    "aac_24000_64": (Codec.AAC, 24000, 64),
    "aac_44100_128": (Codec.AAC, 44100, 128),
}
HEADERLESS = {"pcm", "ulaw", "alaw"}


def test_supported_formats_are_exactly_the_documented_set() -> None:
    assert set(SUPPORTED_FORMATS) == set(EXPECTED)
    assert len(SUPPORTED_FORMATS) == len(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_supported_name_parses(name: str) -> None:
    fmt = parse_output_format(name)
    codec, rate, kbps = EXPECTED[name]
    assert fmt == OutputFormat(name, codec, rate, kbps)
    assert fmt.headerless == (codec.value in HEADERLESS)


@pytest.mark.parametrize("name", ["pcm_8000", "pcm_44100", "ulaw_8000", "alaw_8000"])
def test_headerless_formats_have_a_sample_size(name: str) -> None:
    fmt = parse_output_format(name)
    assert fmt.bytes_per_sample == (2 if fmt.codec is Codec.PCM else 1)


@pytest.mark.parametrize("name", ["wav_24000", "flac_44100", "mp3_44100_128", "opus_48000_64"])
def test_framed_formats_refuse_byte_based_durations(name: str) -> None:
    fmt = parse_output_format(name)
    with pytest.raises(ValueError, match="not headerless"):
        _ = fmt.bytes_per_sample
    with pytest.raises(ValueError, match="not headerless"):
        fmt.duration_ms(1000)


def test_parsing_tolerates_case_and_whitespace() -> None:
    assert parse_output_format("  PCM_24000 ").name == "pcm_24000"
    assert parse_output_format("MP3_22050_32").codec is Codec.MP3


@pytest.mark.parametrize(
    "name",
    ["", "pcm", "pcm_12345", "ulaw_16000", "wav", "pcm-16000", "garbage!", "8000", "vorbis_44100"],
)
def test_unknown_names_list_supported_formats(name: str) -> None:
    with pytest.raises(UnsupportedFormatError) as excinfo:
        parse_output_format(name)
    message = str(excinfo.value)
    assert repr(name) in message
    for supported in SUPPORTED_FORMATS:
        assert supported in message


@pytest.mark.parametrize(
    ("name", "codec"),
    [("mp3_44100_100", "mp3"), ("opus_24000_64", "opus"), ("flac_96000", "flac")],
)
def test_known_codec_at_unknown_rate_names_its_variants_first(name: str, codec: str) -> None:
    with pytest.raises(UnsupportedFormatError) as excinfo:
        parse_output_format(name)
    message = str(excinfo.value)
    variants = [n for n in SUPPORTED_FORMATS if n.startswith(f"{codec}_")]
    head = message.split("supported formats:", maxsplit=1)[0]
    assert f"{codec} is available as {', '.join(variants)}" in head
    assert "pcm_24000" in message


def test_unsupported_format_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="supported formats"):
        parse_output_format("flac_11025")


@pytest.mark.parametrize(
    ("response_format", "expected"),
    [
        ("mp3", "mp3_24000_48"),
        ("opus", "opus_48000_64"),
        ("aac", "aac_24000_64"),
        ("flac", "flac_24000"),
        ("wav", "wav_24000"),
        ("pcm", "pcm_24000"),
        (" WAV ", "wav_24000"),
    ],
)
def test_openai_response_formats(response_format: str, expected: str) -> None:
    assert openai_output_format(response_format) == parse_output_format(expected)


def test_openai_formats_are_24_khz_except_opus() -> None:
    for name in OPENAI_RESPONSE_FORMATS:
        fmt = openai_output_format(name)
        assert fmt.codec.value == name
        assert fmt.sample_rate == (48000 if name == "opus" else 24000)


@pytest.mark.parametrize("response_format", ["", "ogg", "mp3_44100_128", "pcm16"])
def test_unknown_openai_format_lists_the_choices(response_format: str) -> None:
    with pytest.raises(UnsupportedFormatError) as excinfo:
        openai_output_format(response_format)
    message = str(excinfo.value)
    assert repr(response_format) in message
    assert "mp3, opus, aac, flac, wav, pcm" in message


@pytest.mark.parametrize(
    ("name", "media_type", "extension"),
    [
        ("pcm_16000", "audio/pcm", "pcm"),
        ("ulaw_8000", "audio/basic", "ulaw"),
        ("wav_24000", "audio/wav", "wav"),
        ("flac_24000", "audio/flac", "flac"),
        ("mp3_44100_128", "audio/mpeg", "mp3"),
        ("opus_48000_64", "audio/ogg", "opus"),
        ("aac_24000_64", "audio/aac", "aac"),
    ],
)
def test_media_types(name: str, media_type: str, extension: str) -> None:
    fmt = parse_output_format(name)
    assert fmt.media_type == media_type
    assert fmt.file_extension == extension


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


def test_decoder_read_is_known_for_framed_codecs_that_need_it() -> None:
    assert parse_output_format("mp3_22050_32").decoder_read_s > 1.0
    assert parse_output_format("aac_24000_64").decoder_read_s > 1.0
    assert parse_output_format("flac_24000").decoder_read_s > 0
    for name in ("pcm_24000", "ulaw_8000", "opus_48000_64"):
        assert parse_output_format(name).decoder_read_s == 0
