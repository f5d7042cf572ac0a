from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import av
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
HEADERLESS_FORMATS = tuple(n for n in SUPPORTED_FORMATS if parse_output_format(n).headerless)
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
    out += encoder.finish()
    return bytes(out)


@pytest.mark.parametrize("name", HEADERLESS_FORMATS)
def test_stream_byte_count_matches_sample_count(name: str) -> None:
    fmt = parse_output_format(name)
    signal = speech_like(0.75)
    data = encode_stream(name, signal, [1000, 1, 333, 4096])
    samples = resampled_length(len(signal), VOICE_RATE, fmt.sample_rate)
    assert len(data) == samples * fmt.bytes_per_sample
    assert fmt.duration_ms(len(data)) == pytest.approx(750, abs=0.2)


@settings(max_examples=40, deadline=None)
@given(
    # Every format whose bytes do not depend on how calls batch packets (Ogg pages do).
    name=st.sampled_from([n for n in SUPPORTED_FORMATS if not n.startswith("opus")]),
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
    tail = encoder.finish()
    assert len(tail) == 2 * resampled_length(1, VOICE_RATE, 48000)


def test_pcm_clips_instead_of_wrapping() -> None:
    encoder = StreamEncoder(parse_output_format("pcm_22050"), VOICE_RATE)
    data = encoder.encode(np.array([2.0, -2.0], dtype=np.float32)) + encoder.finish()
    assert np.frombuffer(data, dtype="<i2").tolist() == [32767, -32767]


# -- framed formats: what a client's decoder (FFmpeg, via PyAV) makes of the stream ---------------

FRAMED_FORMATS = tuple(n for n in SUPPORTED_FORMATS if not parse_output_format(n).headerless)
DEMUXERS = {
    Codec.WAV: "wav",
    Codec.FLAC: "flac",
    Codec.MP3: "mp3",
    Codec.OPUS: "ogg",
    Codec.AAC: "aac",
}
FIRST_WINDOW = 16 * 256  # the engine's first 16-frame window at the voice rate


@dataclass(frozen=True)
class Decoded:
    audio: npt.NDArray[np.float32]
    sample_rate: int
    errors: int  # packets the decoder rejected (a truncated last frame)


def decode(data: bytes, codec: Codec) -> Decoded | None:
    """Everything FFmpeg decodes from ``data``; None if it cannot even open it (too short)."""
    try:
        container = av.open(io.BytesIO(data), mode="r", format=DEMUXERS[codec])
    except av.error.FFmpegError:
        return None
    chunks: list[npt.NDArray[np.float32]] = []
    errors = 0
    with container:
        stream = container.streams.audio[0]
        assert stream.codec_context.channels == 1
        rate = stream.codec_context.sample_rate
        try:
            for packet in container.demux(stream):
                try:
                    frames = packet.decode()
                except av.error.FFmpegError:
                    errors += 1
                    continue
                for frame in frames:
                    samples = frame.to_ndarray().reshape(-1)
                    if samples.dtype == np.int16:
                        chunks.append(samples.astype(np.float32) / 32768.0)
                    else:
                        chunks.append(samples.astype(np.float32))
        except av.error.FFmpegError:
            errors += 1
    audio = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
    return Decoded(audio, rate, errors)


def decode_all(data: bytes, codec: Codec) -> Decoded:
    decoded = decode(data, codec)
    assert decoded is not None
    assert decoded.errors == 0
    return decoded


def chirp(seconds: float) -> npt.NDArray[np.float32]:
    """A 200-1200 Hz sweep (and its third harmonic): tonal and below 4 kHz, so that even the
    32 kbps codecs keep its waveform, yet with a single unambiguous alignment."""
    t = np.arange(round(seconds * VOICE_RATE)) / VOICE_RATE
    phase = 2 * np.pi * (200 * t + 500 * t**2 / seconds)
    return (0.4 * np.sin(phase) + 0.1 * np.sin(3 * phase)).astype(np.float32)


def resampled(signal: npt.NDArray[np.float32], rate: int) -> npt.NDArray[np.float32]:
    resampler = StreamResampler(VOICE_RATE, rate)
    return np.concatenate((resampler.process(signal), resampler.flush()))


@pytest.mark.parametrize("name", FRAMED_FORMATS)
def test_whole_stream_decodes_to_the_reported_duration(name: str) -> None:
    fmt = parse_output_format(name)
    encoder = StreamEncoder(fmt, VOICE_RATE)
    signal = speech_like(0.75)
    data = bytearray()
    for start in range(0, len(signal), 1234):
        data += encoder.encode(signal[start : start + 1234])
    data += encoder.finish()
    decoded = decode_all(bytes(data), fmt.codec)
    assert decoded.sample_rate == fmt.sample_rate
    assert len(decoded.audio) == encoder.samples_out
    source = resampled_length(len(signal), VOICE_RATE, fmt.sample_rate)
    # Priming plays first (MP3, AAC); past the source only the rest of the last frame follows.
    extra = encoder.samples_out - source - encoder.inserted_samples
    assert 0 <= extra < encoder.frame_size
    assert encoder.inserted_samples <= 1105


@pytest.mark.parametrize("name", FRAMED_FORMATS)
def test_any_prefix_decodes_up_to_the_cut(name: str) -> None:
    """A client that starts decoding early gets all the audio of the complete units it has."""
    fmt = parse_output_format(name)
    encoder = StreamEncoder(fmt, VOICE_RATE)
    signal = speech_like(0.6, seed=3)
    data = bytearray()
    marks = [(0, 0)]  # (bytes so far, samples_out) after each call
    for start in range(0, len(signal), 700):
        data += encoder.encode(signal[start : start + 700])
        marks.append((len(data), encoder.samples_out))
    data += encoder.finish()
    marks.append((len(data), encoder.samples_out))
    rng = np.random.default_rng(len(name))
    cuts = {int(c) for c in rng.integers(1, len(data), 8)} | {marks[len(marks) // 2][0]}
    for cut in sorted(cuts):
        before = max(samples for size, samples in marks if size <= cut)
        after = min(samples for size, samples in marks if size >= cut)
        decoded = decode(bytes(data[:cut]), fmt.codec)
        if decoded is None:
            assert before == 0, f"cut at {cut} of {len(data)} bytes does not open"
            continue
        assert before <= len(decoded.audio) <= after, f"cut at {cut} of {len(data)} bytes"


@pytest.mark.parametrize("name", SUPPORTED_FORMATS)
def test_first_window_gives_decodable_audio(name: str) -> None:
    fmt = parse_output_format(name)
    encoder = StreamEncoder(fmt, VOICE_RATE)
    data = encoder.encode(speech_like(FIRST_WINDOW / VOICE_RATE))
    assert data
    # No format holds the first window back: what the codec keeps (its partial frame and its
    # lookahead, at most one AAC frame of 43 ms) leaves most of it decodable at once.
    window = FIRST_WINDOW * fmt.sample_rate / VOICE_RATE
    assert encoder.samples_out >= 0.6 * window
    if not fmt.headerless:
        assert len(decode_all(data, fmt.codec).audio) == encoder.samples_out


@pytest.mark.parametrize("name", FRAMED_FORMATS)
def test_drain_releases_all_source_audio_and_the_stream_goes_on(name: str) -> None:
    fmt = parse_output_format(name)
    encoder = StreamEncoder(fmt, VOICE_RATE)
    first, second = chirp(0.3), chirp(0.45)
    priming = encoder.inserted_samples
    data = encoder.encode(first)
    data += encoder.drain()
    # Everything of the first segment is decodable now, after the priming played before it.
    first_out = resampled_length(len(first), VOICE_RATE, fmt.sample_rate)
    assert encoder.samples_out >= priming + first_out
    assert len(decode_all(data, fmt.codec).audio) == encoder.samples_out
    assert encoder.drain() == b""  # nothing new: no more silence
    inserted = encoder.inserted_samples
    data += encoder.encode(second) + encoder.drain() + encoder.finish()
    decoded = decode_all(data, fmt.codec)
    assert len(decoded.audio) == encoder.samples_out
    assert encoder.inserted_samples - inserted < 4 * encoder.frame_size + 4096


@pytest.mark.parametrize("name", FRAMED_FORMATS)
def test_inserted_samples_place_source_audio_in_the_stream(name: str) -> None:
    """Source time t plays at stream time t + inserted_samples: each segment sits where the
    encoder says, whatever priming and pause padding went before it."""
    fmt = parse_output_format(name)
    encoder = StreamEncoder(fmt, VOICE_RATE)
    segments = [chirp(0.25), chirp(0.4), chirp(0.3)]
    data = bytearray()
    expected_starts = []
    source_out = 0
    for index, segment in enumerate(segments):
        expected_starts.append(source_out + encoder.inserted_samples)
        for start in range(0, len(segment), 2048):
            data += encoder.encode(segment[start : start + 2048])
        if index < len(segments) - 1:
            data += encoder.drain()
        source_out += resampled_length(len(segment), VOICE_RATE, fmt.sample_rate)
    data += encoder.finish()
    audio = decode_all(bytes(data), fmt.codec).audio
    search = 64
    for segment, start in zip(segments, expected_starts, strict=True):
        reference = resampled(segment, fmt.sample_rate)[: fmt.sample_rate // 5]
        lags = range(-search, search + 1)
        scores = [
            float(np.dot(audio[start + lag : start + lag + len(reference)], reference))
            if start + lag >= 0
            else -np.inf
            for lag in lags
        ]
        best = int(np.argmax(scores))
        # Within a sample: low-bitrate coding shifts the phase a little; a wrong priming or pad
        # count would put the segment hundreds of samples off.
        assert abs(lags[best]) <= 1, f"segment found {lags[best]} samples off"
        window = audio[start : start + len(reference)]
        correlation = np.dot(window, reference) / np.sqrt(
            np.dot(window, window) * np.dot(reference, reference)
        )
        assert correlation > 0.8  # 32 kbps Opus keeps ~0.9 of this waveform, the rest ~0.99


def ogg_pages(data: bytes) -> list[tuple[int, int]]:
    """(flags, granule) of each page; asserts ``data`` is a whole number of pages."""
    pages = []
    while data:
        assert data[:4] == b"OggS"
        flags = data[5]
        granule = int.from_bytes(data[6:14], "little", signed=True)
        count = data[26]
        size = 27 + count + sum(data[27 : 27 + count])
        assert len(data) >= size, "page cut short"
        pages.append((flags, granule))
        data = data[size:]
    return pages


def test_ogg_opus_pages_go_out_with_each_call() -> None:
    fmt = parse_output_format("opus_48000_64")
    encoder = StreamEncoder(fmt, VOICE_RATE)
    signal = speech_like(0.5)[:11000]
    calls = [encoder.encode(signal[start : start + 1000]) for start in range(0, len(signal), 1000)]
    calls += [encoder.drain(), encoder.finish()]
    pages = [ogg_pages(call) for call in calls]  # every call's bytes are whole pages
    flat = [page for call in pages for page in call]
    assert flat[0] == (0x02, 0)  # OpusHead, beginning of stream
    assert flat[1] == (0, 0)  # OpusTags
    assert [flags for flags, _ in flat[2:-1]] == [0] * (len(flat) - 3)
    assert flat[-1][0] == 0x04  # end of stream only at finish
    # Granules grow page by page and end at the stream's length plus the 312-sample pre-skip.
    granules = [granule for _, granule in flat[2:]]
    assert granules == sorted(granules)
    assert granules[-1] == encoder.samples_out + 312
    # 1000 source samples is ~45 ms, two or three 20 ms packets: no call may sit on a full page.
    assert all(len(call) >= 1 for call in pages[1:-2])


def test_opus_chunking_does_not_change_the_audio() -> None:
    fmt = parse_output_format("opus_48000_32")
    signal = speech_like(0.4, seed=5)
    one_shot = decode_all(encode_stream(fmt.name, signal, [len(signal)]), fmt.codec).audio
    chunked = decode_all(encode_stream(fmt.name, signal, [1, 700, 4096, 33]), fmt.codec).audio
    assert np.array_equal(one_shot, chunked)


@pytest.mark.parametrize("name", FRAMED_FORMATS)
def test_empty_stream(name: str) -> None:
    fmt = parse_output_format(name)
    encoder = StreamEncoder(fmt, VOICE_RATE)
    data = encoder.finish()
    decoded = decode(data, fmt.codec)
    if fmt.codec in (Codec.MP3, Codec.AAC):
        assert data == b""  # no header: no frames, no bytes
        assert encoder.samples_out == 0
    else:
        assert decoded is not None
        assert decoded.errors == 0
        # Ogg Opus needs one packet to be a valid stream: it gets 20 ms of silence.
        assert len(decoded.audio) == encoder.samples_out == encoder.inserted_samples
        assert encoder.samples_out == (960 if fmt.codec is Codec.OPUS else 0)


@pytest.mark.parametrize("name", ["pcm_16000", "wav_24000", "mp3_44100_64", "opus_48000_32"])
def test_finish_ends_the_stream(name: str) -> None:
    encoder = StreamEncoder(parse_output_format(name), VOICE_RATE)
    encoder.encode(speech_like(0.1))
    assert encoder.finish() != b"" or name.startswith("pcm")
    assert encoder.finish() == b""
    with pytest.raises(RuntimeError, match="after finish"):
        encoder.encode(speech_like(0.1))
    with pytest.raises(RuntimeError, match="after finish"):
        encoder.drain()


@pytest.mark.parametrize("name", HEADERLESS_FORMATS)
def test_headerless_drain_matches_flushing_and_restarting(name: str) -> None:
    """For raw formats drain() is exactly what the session did before: flush, then a fresh
    resampler for the audio after the pause."""
    fmt = parse_output_format(name)
    first, second = speech_like(0.2), speech_like(0.3, seed=1)
    encoder = StreamEncoder(fmt, VOICE_RATE)
    drained = encoder.encode(first) + encoder.drain() + encoder.encode(second) + encoder.finish()
    expected = encode_stream(name, first, [len(first)]) + encode_stream(name, second, [500])
    assert drained == expected
    assert encoder.samples_out * fmt.bytes_per_sample == len(expected)
    assert encoder.inserted_samples == 0


def test_wav_stream_is_one_header_then_pcm() -> None:
    signal = speech_like(0.3)
    wav = encode_stream("wav_22050", signal, [100, 2000])
    assert wav[:4] == b"RIFF"
    assert wav.count(b"RIFF") == 1
    assert wav[44:] == to_pcm16(signal)
