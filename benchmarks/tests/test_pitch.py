"""The prosody bench's DSP: YIN pitch, energy, contour comparison, silence measures."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from voxflow_bench.levels import (
    LevelSettings,
    frame_levels_db,
    longest_silence_s,
    speech_extent,
    speech_span_s,
)
from voxflow_bench.pitch import (
    PitchSettings,
    compare_f0,
    energy_distance,
    sample_contour,
    semitones,
    track_pitch,
)

RATE = 22050
Audio = npt.NDArray[np.float64]


def tone(hz: float, seconds: float = 0.5, amplitude: float = 0.3) -> Audio:
    t = np.arange(round(seconds * RATE)) / RATE
    return amplitude * np.sin(2 * np.pi * hz * t)


def sawtooth(hz: float, seconds: float = 0.5) -> Audio:
    t = np.arange(round(seconds * RATE)) / RATE
    return 0.3 * (2.0 * ((hz * t) % 1.0) - 1.0)


def voiced_median(audio: Audio) -> tuple[float, float]:
    """Median F0 of the voiced frames and the share of frames that are voiced."""
    track = track_pitch(audio, RATE)
    voiced = track.f0_hz[track.voiced]
    return float(np.median(voiced)), len(voiced) / track.frames


@pytest.mark.parametrize("hz", [110.0, 220.0])
def test_yin_finds_the_f0_of_a_sine_within_one_percent(hz: float) -> None:
    median, share = voiced_median(tone(hz))
    assert median == pytest.approx(hz, rel=0.01)
    assert share > 0.9


@pytest.mark.parametrize("hz", [65.0, 110.0, 150.5, 380.0])
def test_yin_finds_the_f0_of_a_harmonic_rich_tone(hz: float) -> None:
    # 150.5 Hz is a period of 146.5 samples: d' dips deeper at 2T (an integer lag) than at T,
    # so the tracker must keep its preference for the first dip.
    median, share = voiced_median(sawtooth(hz))
    assert median == pytest.approx(hz, rel=0.01)
    assert share > 0.9


def test_a_dominant_second_harmonic_does_not_halve_the_period() -> None:
    # The bundled voice near 95 Hz: the first dip of d' below the threshold is at T/2, which
    # plain YIN takes (190 Hz); the path through the candidates keeps the fundamental.
    t = np.arange(RATE // 2) / RATE
    audio = 0.05 * np.sin(2 * np.pi * 95 * t) + 0.3 * np.sin(2 * np.pi * 190 * t + 0.3)
    first_dip = PitchSettings(octave_cost=1.0)  # plain YIN: any later dip costs too much
    track = track_pitch(audio, RATE, first_dip)
    assert float(np.nanmedian(track.f0_hz)) == pytest.approx(190.0, rel=0.01)
    median, _ = voiced_median(audio)
    assert median == pytest.approx(95.0, rel=0.01)


def test_silence_and_noise_are_unvoiced() -> None:
    rng = np.random.default_rng(7)
    for audio in (np.zeros(RATE), 0.2 * rng.standard_normal(RATE), 1e-4 * tone(150.0)):
        track = track_pitch(audio, RATE)
        assert track.frames > 50
        assert not track.voiced.any()


def test_frames_are_centred_on_the_hop_grid() -> None:
    audio = np.concatenate([np.zeros(RATE // 2), tone(200.0, 0.5)])
    track = track_pitch(audio, RATE)
    assert track.hop_s == pytest.approx(0.01, rel=0.01)
    assert track.frames == len(audio) // 220 + 1
    onset = track.frame_at(0.5)
    # Clear of the onset by more than half a window, each side is what it is.
    assert not track.voiced[: onset - 3].any()
    assert track.voiced[onset + 3 :].all()


def test_energy_is_the_frame_level_in_dbfs() -> None:
    track = track_pitch(tone(200.0, amplitude=0.1), RATE)
    middle = track.energy_db[10:-10]
    assert np.allclose(middle, 10 * np.log10(0.1**2 / 2), atol=0.2)


def test_empty_audio_gives_an_empty_track() -> None:
    track = track_pitch(np.zeros(0), RATE)
    assert track.frames == 0
    f0, energy = sample_contour(track, 0.0, 1.0, 5)
    assert np.isnan(f0).all() and np.isnan(energy).all()


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="fmin_hz"):
        PitchSettings(fmin_hz=400.0, fmax_hz=100.0)
    with pytest.raises(ValueError, match="window_ms"):
        PitchSettings(window_ms=20.0)
    with pytest.raises(ValueError, match="jump_cost"):
        PitchSettings(jump_cost=-1.0)
    with pytest.raises(ValueError, match="silence_db"):
        LevelSettings(silence_db=float("nan"))


# -- contours ----------------------------------------------------------------------------------


def glide(start_hz: float, end_hz: float, seconds: float) -> Audio:
    """A tone gliding exponentially from ``start_hz`` to ``end_hz``."""
    t = np.arange(round(seconds * RATE)) / RATE
    hz = start_hz * (end_hz / start_hz) ** (t / seconds)
    return 0.3 * np.sin(2 * np.pi * np.cumsum(hz) / RATE)


def contour(audio: Audio, points: int = 10) -> tuple[Audio, Audio]:
    track = track_pitch(audio, RATE)
    # The middle of the tone, clear of the zero padding at its ends.
    return sample_contour(track, 0.05, len(audio) / RATE - 0.05, points)


def test_contour_distance_is_zero_for_identical_inputs() -> None:
    f0, energy = contour(glide(100.0, 150.0, 0.6))
    same = compare_f0(f0, f0.copy())
    assert same.rms_st == 0.0
    assert same.end_delta_st == 0.0
    assert same.compared == 10
    assert energy_distance(energy, energy.copy(), -50.0) == 0.0


def test_contour_distance_grows_with_a_pitch_shift() -> None:
    base, _ = contour(glide(100.0, 150.0, 0.6))
    distances = []
    for shift in (1.0, 2.0, 4.0):
        shifted, _ = contour(glide(100.0 * 2 ** (shift / 12), 150.0 * 2 ** (shift / 12), 0.6))
        result = compare_f0(shifted, base)
        assert result.rms_st is not None
        assert result.rms_st == pytest.approx(shift, abs=0.1)
        assert result.end_delta_st == pytest.approx(shift, abs=0.1)
        distances.append(result.rms_st)
    assert distances == sorted(distances)
    lower, _ = contour(glide(100.0 * 2 ** (-2 / 12), 150.0 * 2 ** (-2 / 12), 0.6))
    end = compare_f0(lower, base).end_delta_st
    assert end is not None and end < -1.5  # negative: the test rendering is lower


def test_contours_are_compared_on_each_words_own_time_axis() -> None:
    # The same glide spoken 50% slower: time-normalised, the shapes match.
    fast, _ = contour(glide(100.0, 160.0, 0.4))
    slow, _ = contour(glide(100.0, 160.0, 0.6))
    result = compare_f0(slow, fast)
    assert result.rms_st is not None and result.rms_st < 0.5


def test_octave_apart_points_are_counted_not_averaged() -> None:
    base = np.full(10, 100.0)
    test = base.copy()
    test[:3] = 200.0  # a tracker octave error
    test[3:] = 100.0 * 2 ** (1 / 12)
    result = compare_f0(test, base)
    assert result.octave_errors == 3
    assert result.compared == 7
    assert result.rms_st == pytest.approx(1.0, abs=1e-9)


def test_unvoiced_points_are_left_out() -> None:
    base = np.array([100.0, np.nan, 100.0, 100.0])
    test = np.array([np.nan, 110.0, 100.0, 100.0])
    assert compare_f0(test, base).compared == 2
    assert compare_f0(np.full(4, np.nan), base).rms_st is None
    assert np.isnan(semitones(test, base)[:2]).all()


def test_energy_distance_is_the_level_difference_above_the_floor() -> None:
    quiet = np.array([-30.0, -30.0, -90.0])
    loud = np.array([-24.0, -24.0, -80.0])
    # Both last points are below the -60 dB floor: silence on both sides, no difference.
    assert energy_distance(loud, quiet, -60.0) == pytest.approx(np.sqrt(2 * 36 / 3))
    assert energy_distance(np.zeros(0), np.zeros(0), -60.0) is None


# -- levels ------------------------------------------------------------------------------------


def gap(seconds: float) -> Audio:
    return np.concatenate([tone(150.0, 0.3), np.zeros(round(seconds * RATE)), tone(150.0, 0.3)])


@pytest.mark.parametrize("seconds", [0.0, 0.02, 0.12, 0.4])
def test_longest_silence_measures_a_known_gap(seconds: float) -> None:
    audio = gap(seconds)
    measured = longest_silence_s(audio, RATE, 0, len(audio))
    # Frames straddling the edges of the gap are loud: up to one frame each side is lost.
    assert seconds - 0.0101 <= measured <= seconds + 1e-9


def test_longest_silence_only_looks_inside_the_span() -> None:
    audio = np.concatenate([np.zeros(RATE // 2), gap(0.1)])
    start = RATE // 2 + round(0.15 * RATE)
    assert longest_silence_s(audio, RATE, start, len(audio)) == pytest.approx(0.1, abs=0.0101)
    assert longest_silence_s(audio, RATE, 0, len(audio)) == pytest.approx(0.5, abs=0.0101)


def test_the_silence_threshold_is_a_parameter() -> None:
    # A -56 dBFS hum between two tones: silence at -50, sound at -60.
    hum = tone(150.0, 0.2, amplitude=10 ** (-56 / 20) * np.sqrt(2))
    audio = np.concatenate([tone(150.0, 0.3), hum, tone(150.0, 0.3)])
    assert longest_silence_s(audio, RATE, 0, len(audio)) == pytest.approx(0.2, abs=0.0101)
    strict = LevelSettings(silence_db=-60.0)
    assert longest_silence_s(audio, RATE, 0, len(audio), strict) == 0.0


def test_speech_extent_and_span() -> None:
    lead, speech, tail = round(0.1 * RATE), round(0.5 * RATE), round(0.2 * RATE)
    audio = np.concatenate([np.zeros(lead), tone(200.0, 0.5), np.zeros(tail)])
    extent = speech_extent(audio, RATE, 0, len(audio))
    assert extent is not None
    frame = LevelSettings().frame_samples(RATE)
    assert abs(extent[0] - lead) <= frame
    assert abs(extent[1] - (lead + speech)) <= frame
    assert speech_span_s(audio, RATE) == pytest.approx(0.5, abs=0.011)
    assert speech_extent(np.zeros(RATE), RATE, 0, RATE) is None
    assert speech_span_s(np.zeros(RATE), RATE) == 0.0


def test_frame_levels_skip_a_partial_frame() -> None:
    frame = LevelSettings().frame_samples(RATE)
    levels = frame_levels_db(tone(200.0, 0.1), RATE, 0, 3 * frame + frame // 2, frame)
    assert len(levels) == 3
    assert len(frame_levels_db(tone(200.0, 0.1), RATE, 50, 40, frame)) == 0
