from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxflow.audio.resample import ResampleQuality, StreamResampler, resampled_length

VOICE_RATE = 22050
TARGETS = (8000, 16000, 24000, 44100, 48000)
RATE_PAIRS = [(VOICE_RATE, target) for target in TARGETS] + [(16000, 22050), (48000, 22050), (7, 5)]


def tone(freq: float, seconds: float, rate: int, amplitude: float = 0.5) -> npt.NDArray[np.float32]:
    t = np.arange(round(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def one_shot(source: int, target: int, signal: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    resampler = StreamResampler(source, target)
    return np.concatenate((resampler.process(signal), resampler.flush()))


def chunked(
    source: int, target: int, signal: npt.NDArray[np.float32], sizes: list[int]
) -> list[npt.NDArray[np.float32]]:
    """Feeds `signal` in pieces of the given sizes (cycled), then flushes."""
    resampler = StreamResampler(source, target)
    outputs = []
    start = 0
    index = 0
    while start < len(signal):
        size = sizes[index % len(sizes)]
        outputs.append(resampler.process(signal[start : start + size]))
        start += size
        index += 1
        # A run of empty chunks must not loop forever: force progress every few calls.
        if index % 8 == 0 and size == 0:
            outputs.append(resampler.process(signal[start : start + 1]))
            start += 1
    outputs.append(resampler.flush())
    return outputs


def rms_db(signal: npt.NDArray[np.float32]) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(np.square(signal, dtype=np.float64)))))


@settings(max_examples=150, deadline=None)
@given(
    pair=st.sampled_from(RATE_PAIRS),
    length=st.integers(min_value=0, max_value=3000),
    sizes=st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=12),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_chunked_output_matches_one_shot(
    pair: tuple[int, int], length: int, sizes: list[int], seed: int
) -> None:
    source, target = pair
    signal = np.random.default_rng(seed).uniform(-1, 1, length).astype(np.float32)
    pieces = chunked(source, target, signal, sizes)
    whole = one_shot(source, target, signal)
    joined = np.concatenate(pieces)
    assert all(piece.dtype == np.float32 for piece in pieces)
    assert len(joined) == len(whole) == resampled_length(length, source, target)
    if length:
        assert np.max(np.abs(joined - whole)) < 1e-5


@pytest.mark.parametrize(("source", "target"), RATE_PAIRS)
def test_one_sample_at_a_time_matches_one_shot(source: int, target: int) -> None:
    signal = tone(440, 0.02, source) + tone(3000, 0.02, source, 0.2)
    pieces = chunked(source, target, signal, [1])
    np.testing.assert_allclose(np.concatenate(pieces), one_shot(source, target, signal), atol=1e-5)


@pytest.mark.parametrize("rate", [22050, 8000, 48000])
def test_identity_passes_through_unchanged(rate: int) -> None:
    resampler = StreamResampler(rate, rate)
    signal = np.random.default_rng(3).uniform(-1, 1, 1234).astype(np.float32)
    assert resampler.latency_samples == 0
    out = resampler.process(signal[:1000])
    np.testing.assert_array_equal(out, signal[:1000])
    out2 = resampler.process(signal[1000:])
    np.testing.assert_array_equal(out2, signal[1000:])
    assert len(resampler.flush()) == 0
    # The output must be a copy: callers may reuse or mutate their input buffers.
    signal[:] = 0
    assert np.any(out != 0)


@pytest.mark.parametrize(("source", "target"), RATE_PAIRS)
@pytest.mark.parametrize("length", [0, 1, 2, 17, 147, 441, 1000, 22050, 22051])
def test_total_length_is_the_rounded_ratio(source: int, target: int, length: int) -> None:
    out = one_shot(source, target, np.zeros(length, dtype=np.float32))
    assert abs(len(out) - round(length * target / source)) <= 1
    assert len(out) == resampled_length(length, source, target)


def test_one_second_maps_to_exactly_one_second() -> None:
    for target in TARGETS:
        assert len(one_shot(VOICE_RATE, target, np.zeros(VOICE_RATE, np.float32))) == target


@pytest.mark.parametrize("target", [8000, 16000, 24000, 48000])
def test_sine_keeps_frequency_and_amplitude(target: int) -> None:
    out = one_shot(VOICE_RATE, target, tone(440, 1.0, VOICE_RATE))
    assert len(out) == target
    spectrum = np.abs(np.fft.rfft(out * np.hanning(len(out))))
    peak_hz = np.argmax(spectrum) * target / len(out)
    assert abs(peak_hz - 440) <= 1.0  # 1 s of signal gives 1 Hz bins
    steady = out[target // 10 : -target // 10]  # away from the silent edges
    assert abs(rms_db(steady) - rms_db(tone(440, 1.0, VOICE_RATE))) < 1.0
    assert abs(float(np.max(np.abs(steady))) - 0.5) < 0.5 * (10 ** (1 / 20) - 1)


@pytest.mark.parametrize(("target", "freq"), [(8000, 3000), (16000, 6000), (24000, 9000)])
def test_passband_is_kept_up_to_three_quarters_of_nyquist(target: int, freq: float) -> None:
    out = one_shot(VOICE_RATE, target, tone(freq, 0.5, VOICE_RATE))[200:-200]
    assert abs(rms_db(out) - rms_db(tone(freq, 0.5, VOICE_RATE))) < 0.5


@pytest.mark.parametrize("freq", [4400, 5000, 6000, 8000, 10000])
def test_tones_above_output_nyquist_are_removed(freq: float) -> None:
    source = tone(freq, 0.5, VOICE_RATE)
    out = one_shot(VOICE_RATE, 8000, source)[200:-200]
    # Without a filter the tone would alias into the band at full level.
    assert rms_db(out) - rms_db(source) < -40.0


def test_chunked_sine_has_no_clicks_at_joins() -> None:
    for target in TARGETS:
        signal = tone(440, 0.5, VOICE_RATE, amplitude=0.9)
        whole = one_shot(VOICE_RATE, target, signal)
        joined = np.concatenate(chunked(VOICE_RATE, target, signal, [1, 37, 0, 256, 5, 1024, 3]))
        assert np.max(np.abs(np.diff(joined))) <= np.max(np.abs(np.diff(whole))) + 1e-5


def test_latency_is_a_few_milliseconds() -> None:
    for target in TARGETS:
        resampler = StreamResampler(VOICE_RATE, target)
        assert resampler.latency_samples > 0
        assert resampler.latency_ms == pytest.approx(1000 * resampler.latency_samples / VOICE_RATE)
        assert resampler.latency_ms <= 3.0


@pytest.mark.parametrize("target", TARGETS)
def test_process_emits_everything_not_held_back(target: int) -> None:
    resampler = StreamResampler(VOICE_RATE, target)
    fed = 2205  # 100 ms
    out = resampler.process(tone(440, 0.1, VOICE_RATE))
    # Only the output instants that need input beyond what was fed may be held back.
    available = resampled_length(fed - resampler.latency_samples, VOICE_RATE, target)
    assert len(out) == available
    assert len(out) + len(resampler.flush()) == resampled_length(fed, VOICE_RATE, target)


def test_higher_quality_setting_changes_latency() -> None:
    default = StreamResampler(VOICE_RATE, 48000)
    longer = StreamResampler(VOICE_RATE, 48000, ResampleQuality(half_length=32))
    assert longer.latency_samples == 2 * default.latency_samples


def test_one_second_to_48k_is_fast() -> None:
    signal = np.random.default_rng(0).uniform(-1, 1, VOICE_RATE).astype(np.float32)
    timings = []
    for _ in range(5):
        resampler = StreamResampler(VOICE_RATE, 48000)
        start = time.perf_counter()
        resampler.process(signal)
        resampler.flush()
        timings.append(time.perf_counter() - start)
    assert min(timings) < 0.010


def test_flush_is_final() -> None:
    resampler = StreamResampler(VOICE_RATE, 16000)
    resampler.process(np.ones(100, dtype=np.float32))
    assert len(resampler.flush()) > 0
    assert len(resampler.flush()) == 0
    with pytest.raises(RuntimeError):
        resampler.process(np.ones(10, dtype=np.float32))


@pytest.mark.parametrize(("source", "target"), [(0, 8000), (22050, 0), (-1, 8000)])
def test_rejects_non_positive_rates(source: int, target: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        StreamResampler(source, target)


@pytest.mark.parametrize(
    "kwargs", [{"half_length": 0}, {"cutoff": 0.0}, {"cutoff": 1.2}, {"kaiser_beta": -1.0}]
)
def test_rejects_bad_quality(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ResampleQuality(**kwargs)  # type: ignore[arg-type]


def test_dc_is_preserved_exactly_in_steady_state() -> None:
    for target in TARGETS:
        out = one_shot(VOICE_RATE, target, np.full(4000, 0.25, dtype=np.float32))
        np.testing.assert_allclose(out[100:-100], 0.25, atol=1e-6)


def test_streams_of_one_rate_pair_share_a_read_only_filter_bank() -> None:
    first = StreamResampler(22050, 24000)
    second = StreamResampler(22050, 24000)
    assert first._bank is second._bank  # designed once
    with pytest.raises(ValueError):
        first._bank[0, 0] = 1.0  # no stream can change another's
