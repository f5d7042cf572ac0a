from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxflow.audio.encoders import (
    StreamEncoder,
    decode_alaw,
    decode_ulaw,
    encode_alaw,
    encode_ulaw,
)
from voxflow.audio.formats import SUPPORTED_FORMATS, Codec, parse_output_format
from voxflow.audio.pcm import to_pcm16
from voxflow.audio.resample import StreamResampler, resampled_length

VOICE_RATE = 22050
Encode = Callable[[npt.NDArray[np.int16]], bytes]
Decode = Callable[[bytes], npt.NDArray[np.int16]]
ALL_INT16 = np.arange(-32768, 32768, dtype=np.int16)


def reference_ulaw(sample: int) -> int:
    """Scalar transcription of the ITU-T G.191 reference mu-law compressor."""
    biased = ((~sample if sample < 0 else sample) >> 2) + 33
    biased = min(biased, 0x1FFF)
    segment = 1
    rest = biased >> 6
    while rest:
        segment += 1
        rest >>= 1
    code = ((8 - segment) << 4) | (15 - ((biased >> segment) & 0x0F))
    return code | 0x80 if sample >= 0 else code


def reference_alaw(sample: int) -> int:
    """Scalar transcription of the classic table-search A-law compressor."""
    value = sample >> 3
    mask = 0xD5
    if value < 0:
        mask = 0x55
        value = -value - 1
    ends = (0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF)
    segment = next(index for index, end in enumerate(ends) if value <= end)
    mantissa = (value >> 1 if segment < 2 else value >> segment) & 0x0F
    return ((segment << 4) | mantissa) ^ mask


def codes(data: bytes) -> list[int]:
    return list(data)


@pytest.mark.parametrize(
    ("sample", "ulaw", "alaw"),
    [(0, 0xFF, 0xD5), (-1, 0x7F, 0x55), (32767, 0x80, 0xAA), (-32768, 0x00, 0x2A)],
)
def test_known_codes(sample: int, ulaw: int, alaw: int) -> None:
    pcm = np.array([sample], dtype=np.int16)
    assert codes(encode_ulaw(pcm)) == [ulaw]
    assert codes(encode_alaw(pcm)) == [alaw]


def test_known_decoded_values() -> None:
    assert decode_ulaw(bytes([0xFF, 0x7F, 0x80, 0x00])).tolist() == [0, 0, 32124, -32124]
    assert decode_alaw(bytes([0xD5, 0x55, 0xAA, 0x2A])).tolist() == [8, -8, 32256, -32256]


def test_ulaw_matches_reference_for_every_sample() -> None:
    expected = [reference_ulaw(int(sample)) for sample in ALL_INT16]
    assert codes(encode_ulaw(ALL_INT16)) == expected


def test_alaw_matches_reference_for_every_sample() -> None:
    expected = [reference_alaw(int(sample)) for sample in ALL_INT16]
    assert codes(encode_alaw(ALL_INT16)) == expected


@pytest.mark.parametrize(
    ("encode", "decode"), [(encode_ulaw, decode_ulaw), (encode_alaw, decode_alaw)]
)
def test_companding_is_monotonic_and_uses_all_codes(encode: Encode, decode: Decode) -> None:
    data = encode(ALL_INT16)
    assert len(set(data)) == 256
    decoded = decode(data).astype(np.int32)
    assert np.all(np.diff(decoded) >= 0)


def test_ulaw_round_trip_within_half_a_step() -> None:
    decoded = decode_ulaw(encode_ulaw(ALL_INT16)).astype(np.int32)
    magnitude = np.abs(ALL_INT16.astype(np.int32))
    error = np.abs(decoded - ALL_INT16)
    in_range = magnitude <= 32635  # beyond this the coder clips to its top level
    # Steps double every segment; half a step is at most (|x| + 132) / 32 in 16-bit units.
    assert np.all(error[in_range] <= (magnitude[in_range] + 132) / 32)
    assert np.all(error[~in_range] <= 32768 - 32124)


def test_alaw_round_trip_within_half_a_step() -> None:
    decoded = decode_alaw(encode_alaw(ALL_INT16)).astype(np.int32)
    magnitude = np.abs(ALL_INT16.astype(np.int32))
    error = np.abs(decoded - ALL_INT16)
    # Linear 16-unit steps below 512, then steps of |x| / 16 at most.
    assert np.all(error <= np.maximum(8, magnitude / 32))


@pytest.mark.parametrize(
    ("encode", "decode", "ambiguous"),
    [(encode_ulaw, decode_ulaw, {0x7F}), (encode_alaw, decode_alaw, set())],
)
def test_decoded_levels_encode_back_to_their_code(
    encode: Encode, decode: Decode, ambiguous: set[int]
) -> None:
    # mu-law has two codes for zero (+0 and -0); the encoder always picks +0 (0xFF).
    all_codes = bytes(code for code in range(256) if code not in ambiguous)
    assert encode(decode(all_codes)) == all_codes


def test_empty_inputs() -> None:
    empty = np.zeros(0, dtype=np.int16)
    assert encode_ulaw(empty) == b""
    assert encode_alaw(empty) == b""
    assert len(decode_ulaw(b"")) == 0
    assert decode_alaw(b"").dtype == np.int16


def speech_like(seconds: float, seed: int = 0) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * VOICE_RATE)) / VOICE_RATE
    voiced = 0.4 * np.sin(2 * np.pi * 180 * t) + 0.2 * np.sin(2 * np.pi * 2400 * t)
    return (voiced + 0.05 * rng.standard_normal(len(t))).astype(np.float32)


def encode_stream(name: str, signal: npt.NDArray[np.float32], sizes: list[int]) -> bytes:
    encoder = StreamEncoder(parse_output_format(name), VOICE_RATE)
    out = bytearray()
    start = 0
    index = 0
    while start < len(signal):
        size = max(sizes[index % len(sizes)], 1)
        out += encoder.encode(signal[start : start + size])
        start += size
        index += 1
    out += encoder.flush()
    return bytes(out)


@pytest.mark.parametrize("name", SUPPORTED_FORMATS)
def test_stream_byte_count_matches_sample_count(name: str) -> None:
    fmt = parse_output_format(name)
    signal = speech_like(0.75)
    data = encode_stream(name, signal, [1000, 1, 333, 4096])
    samples = resampled_length(len(signal), VOICE_RATE, fmt.sample_rate)
    assert len(data) == samples * fmt.bytes_per_sample
    assert fmt.duration_ms(len(data)) == pytest.approx(750, abs=0.2)


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(SUPPORTED_FORMATS),
    sizes=st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=8),
)
def test_chunked_bytes_equal_one_shot(name: str, sizes: list[int]) -> None:
    signal = speech_like(0.3, seed=len(sizes))
    assert encode_stream(name, signal, sizes) == encode_stream(name, signal, [len(signal)])


def test_pcm_at_source_rate_is_plain_pcm16() -> None:
    signal = speech_like(0.2)
    assert encode_stream("pcm_22050", signal, [500]) == to_pcm16(signal)


@pytest.mark.parametrize(("name", "codec"), [("ulaw_8000", Codec.ULAW), ("alaw_8000", Codec.ALAW)])
def test_telephony_stream_decodes_close_to_resampled_pcm(name: str, codec: Codec) -> None:
    signal = speech_like(0.5)
    resampler = StreamResampler(VOICE_RATE, 8000)
    reference = np.frombuffer(
        to_pcm16(np.concatenate((resampler.process(signal), resampler.flush()))), dtype="<i2"
    ).astype(np.int32)
    data = encode_stream(name, signal, [441])
    decoded = (decode_ulaw(data) if codec is Codec.ULAW else decode_alaw(data)).astype(np.int32)
    assert len(decoded) == len(reference) == 4000
    # 8-bit G.711 keeps roughly 35-38 dB SNR on a loud signal.
    noise = np.sum((decoded - reference).astype(np.float64) ** 2)
    snr_db = 10 * np.log10(np.sum(reference.astype(np.float64) ** 2) / noise)
    assert snr_db > 30


def test_encode_may_hold_everything_back_until_flush() -> None:
    encoder = StreamEncoder(parse_output_format("pcm_48000"), VOICE_RATE)
    assert encoder.latency_samples > 1
    assert encoder.encode(np.array([0.5], dtype=np.float32)) == b""
    tail = encoder.flush()
    assert len(tail) == 2 * resampled_length(1, VOICE_RATE, 48000)


def test_pcm_clips_instead_of_wrapping() -> None:
    encoder = StreamEncoder(parse_output_format("pcm_22050"), VOICE_RATE)
    data = encoder.encode(np.array([2.0, -2.0], dtype=np.float32)) + encoder.flush()
    assert np.frombuffer(data, dtype="<i2").tolist() == [32767, -32767]
