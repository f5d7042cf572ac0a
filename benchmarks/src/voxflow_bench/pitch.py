"""A YIN pitch tracker and a frame-energy track, written with numpy, for the prosody bench.

YIN (de Cheveigné and Kawahara, 2002): per frame, the difference function
``d(tau) = sum_j (x[j] - x[j + tau])^2`` over an integration window, normalised by its running
mean (``d'``); the period is a lag in ``[rate / fmax, rate / fmin]`` where ``d'`` dips below
``threshold``, refined by a parabola through its neighbours. A frame with no such dip, or
quieter than ``min_db``, is unvoiced. Plain YIN takes the first such dip, which keeps it off the
sub-octave (a period of 2T fits as well as T).

One change, for octave errors: a low voice whose second harmonic is stronger than its
fundamental (the bundled voice, near 95 Hz) often dips below the threshold at T/2 as well as at
T, and at the onset of voicing the T/2 dip can be the deeper one, so neither "first dip" nor
"deepest dip" is right frame by frame. Each frame's dips are therefore candidates of a Viterbi
path (``_best_path``) that pays for octave jumps and voicing changes between frames and keeps
YIN's preference for the first dip as a small cost per octave: the continuity of the contour
decides.

Frames are centred on multiples of ``hop_ms`` from the first sample (the signal is padded with
zeros by half a window on each side), so frame ``k`` describes the audio around ``k * hop``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_BLOCK_FRAMES = 256  # frames per FFT batch: bounds memory on long replies
_TINY = 1e-12


@dataclass(frozen=True)
class PitchSettings:
    """How pitch and energy are tracked. ``window_ms`` is the whole analysis frame: the longest
    lag (``1 / fmin``) plus the integration window must fit in it.

    ``threshold`` 0.3 is above YIN's usual 0.1-0.2: on the bundled voice the frames of a
    phrase-final fall (95 to 65 Hz within a few frames, often creaky) reach only 0.2-0.35 at
    their true period, and they are exactly the frames a cut changes; at 0.15 a falling end
    read as unvoiced. Noise stays far above it (white noise >= 0.8, low-passed noise >= 0.58 on
    this window). ``min_db`` keeps silence, whose tiny residue can look periodic to ``d'``, out
    of the voiced frames.

    Path costs (``_best_path``), in units of ``d'``, tuned on 28 renderings of the bundled
    voice: ``jump_cost`` per octave between voiced frames (natural movement, up to ~2 semitones
    per 10 ms, costs < 0.1); ``voicing_cost`` per change between voiced and unvoiced, so that an
    unvoiced frame is no free reset between two runs an octave apart (0.1: octave jumps between
    voiced frames less than 40 ms apart fell from 128 to 17 of ~2300; 0.2 left 8 but dropped the
    short voiced islands of creaky phrase ends, which the end-F0 measure needs: 43% and 41% of
    the frames above -40 dBFS stay voiced, against 47% without);
    ``octave_cost`` per octave beyond the frame's first dip: a harmonic-rich tone whose period
    is a fractional number of samples dips ~0.012 deeper at 2T than at T (an integer lag fits 2T
    better), so 0.03 keeps it on T.
    """

    hop_ms: float = 10.0
    window_ms: float = 40.0
    fmin_hz: float = 60.0
    fmax_hz: float = 400.0
    threshold: float = 0.3
    min_db: float = -50.0
    jump_cost: float = 0.5
    octave_cost: float = 0.03
    voicing_cost: float = 0.1
    max_candidates: int = 4

    def __post_init__(self) -> None:
        for name in ("hop_ms", "window_ms", "fmin_hz", "fmax_hz", "threshold"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if self.fmin_hz >= self.fmax_hz:
            raise ValueError("fmin_hz must be below fmax_hz")
        for name in ("jump_cost", "octave_cost", "voicing_cost"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.max_candidates < 1:
            raise ValueError(f"max_candidates must be >= 1, got {self.max_candidates}")
        if not math.isfinite(self.min_db):
            raise ValueError(f"min_db must be finite, got {self.min_db!r}")
        # The integration window must hold at least one longest period next to the lag range.
        if self.window_ms < 2000.0 / self.fmin_hz:
            raise ValueError(
                f"window_ms must be at least two periods of fmin ({2000.0 / self.fmin_hz:.1f} ms)"
            )


@dataclass(frozen=True, eq=False)
class PitchTrack:
    """Per frame: its centre (s), F0 in Hz (NaN where unvoiced) and energy in dBFS."""

    hop_s: float
    f0_hz: FloatArray = field(repr=False)
    energy_db: FloatArray = field(repr=False)

    @property
    def voiced(self) -> BoolArray:
        voiced: BoolArray = np.isfinite(self.f0_hz)
        return voiced

    @property
    def frames(self) -> int:
        return len(self.f0_hz)

    def frame_at(self, time_s: float) -> int:
        """The frame whose centre is nearest ``time_s`` (clipped to the track)."""
        index = round(time_s / self.hop_s)
        return min(max(index, 0), max(self.frames - 1, 0))


def track_pitch(
    audio: npt.NDArray[np.floating], sample_rate: int, settings: PitchSettings | None = None
) -> PitchTrack:
    """F0 and energy of ``audio`` (mono, float, full scale 1.0) every ``hop_ms``."""
    s = settings or PitchSettings()
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be > 0, got {sample_rate}")
    hop = max(1, round(sample_rate * s.hop_ms / 1000.0))
    window = round(sample_rate * s.window_ms / 1000.0)
    tau_min = max(2, math.floor(sample_rate / s.fmax_hz))
    tau_max = math.ceil(sample_rate / s.fmin_hz)
    integration = window - tau_max
    signal = np.asarray(audio, dtype=np.float64).reshape(-1)
    count = len(signal) // hop + 1 if len(signal) else 0
    if count == 0:
        empty = np.zeros(0, dtype=np.float64)
        return PitchTrack(hop / sample_rate, empty, empty.copy())
    half = window // 2
    padded = np.concatenate([np.zeros(half), signal, np.zeros(window)])
    frames = sliding_window_view(padded, window)[::hop][:count]
    lags = np.full((count, s.max_candidates), np.nan)
    depths = np.full((count, s.max_candidates), np.inf)
    energy = 10.0 * np.log10(np.mean(frames * frames, axis=1) + _TINY)
    for lo in range(0, count, _BLOCK_FRAMES):
        block = frames[lo : lo + _BLOCK_FRAMES]
        lag, depth = _dips(_cmnd(block, integration, tau_max), tau_min, tau_max, s)
        lags[lo : lo + len(block), : lag.shape[1]] = lag
        depths[lo : lo + len(block), : depth.shape[1]] = depth
    quiet = energy < s.min_db
    lags[quiet] = np.nan
    depths[quiet] = np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        f0 = sample_rate / _best_path(lags, depths, s)
    return PitchTrack(hop / sample_rate, f0, energy)


def _cmnd(frames: FloatArray, integration: int, tau_max: int) -> FloatArray:
    """YIN's cumulative-mean-normalised difference ``d'(tau)``, ``tau`` in ``0..tau_max``."""
    window = frames.shape[1]
    size = 1 << (window + integration).bit_length()  # no circular wrap for lags <= tau_max
    head = frames[:, :integration]
    # sum_j x[j] x[j + tau] for every tau at once, by FFT cross-correlation.
    spectrum = np.conj(np.fft.rfft(head, size)) * np.fft.rfft(frames, size)
    correlation = np.fft.irfft(spectrum, size)[:, : tau_max + 1]
    squares = np.concatenate(
        [np.zeros((len(frames), 1)), np.cumsum(frames * frames, axis=1)], axis=1
    )
    lags = np.arange(tau_max + 1)
    lagged_energy = squares[:, lags + integration] - squares[:, lags]
    difference = np.maximum(squares[:, [integration]] + lagged_energy - 2.0 * correlation, 0.0)
    running = np.cumsum(difference[:, 1:], axis=1)
    cmnd: FloatArray = np.ones_like(difference, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        normalised = difference[:, 1:] * lags[1:] / running
    # Where the running sum is 0 (digital silence) nothing is periodic: d' stays 1.
    cmnd[:, 1:] = np.where(running > _TINY, normalised, 1.0)
    return cmnd


def _dips(
    cmnd: FloatArray, tau_min: int, tau_max: int, s: PitchSettings
) -> tuple[FloatArray, FloatArray]:
    """Per frame, the ``max_candidates`` deepest dips of ``d'`` below the threshold: their
    refined lags and their ``d'`` (NaN and inf where a frame has fewer)."""
    inner = cmnd[:, 1:-1]
    lags = np.arange(1, cmnd.shape[1] - 1)[np.newaxis, :]
    minimum = (inner < cmnd[:, :-2]) & (inner <= cmnd[:, 2:]) & (inner < s.threshold)
    minimum &= lags >= tau_min
    value = np.where(minimum, inner, np.inf)
    k = min(s.max_candidates, value.shape[1])
    order = np.argsort(value, axis=1, kind="stable")[:, :k]
    depth = np.take_along_axis(value, order, axis=1)
    tau = order + 1
    lag = np.where(np.isfinite(depth), _refine(cmnd, tau, tau_max), np.nan)
    return lag, depth


def _refine(cmnd: FloatArray, tau: npt.NDArray[np.int64], tau_max: int) -> FloatArray:
    """``tau`` (any shape, one row of ``cmnd`` per row) moved to the bottom of a parabola
    through its neighbours' ``d'``."""
    left = np.take_along_axis(cmnd, np.maximum(tau - 1, 0), axis=1)
    centre = np.take_along_axis(cmnd, tau, axis=1)
    right = np.take_along_axis(cmnd, np.minimum(tau + 1, tau_max), axis=1)
    curvature = left - 2.0 * centre + right
    inside = (tau > 0) & (tau < tau_max) & (curvature > _TINY)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(inside, 0.5 * (left - right) / curvature, 0.0)
    refined: FloatArray = tau + np.clip(shift, -1.0, 1.0)
    return refined


def _best_path(lag: FloatArray, depth: FloatArray, s: PitchSettings) -> FloatArray:
    """The period of each frame (NaN: unvoiced) on the cheapest path through the candidates.

    States: each candidate dip, and unvoiced. A dip costs its ``d'`` plus ``octave_cost`` per
    octave its lag lies beyond the frame's shortest candidate (YIN's preference for the first
    dip, made soft); unvoiced costs ``threshold``; moving between two voiced frames costs
    ``jump_cost`` per octave of change, and between voiced and unvoiced ``voicing_cost``. So a
    frame or a short run an octave off its neighbours is moved to its dip at the neighbours'
    period or, failing one, left unvoiced.
    """
    frames, k = lag.shape
    if frames == 0:
        return np.zeros(0, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        octaves = np.log2(lag)
    shortest = np.nanmin(np.where(np.isfinite(octaves), octaves, np.inf), axis=1, initial=np.inf)
    local = np.empty((frames, k + 1))
    local[:, :k] = np.where(
        np.isfinite(depth), depth + s.octave_cost * (octaves - shortest[:, np.newaxis]), np.inf
    )
    local[:, k] = s.threshold
    cost = local[0].copy()
    back = np.zeros((frames, k + 1), dtype=np.int64)
    for t in range(1, frames):
        step = np.full((k + 1, k + 1), s.voicing_cost)
        step[k, k] = 0.0
        jump = np.abs(octaves[t][np.newaxis, :] - octaves[t - 1][:, np.newaxis])
        step[:k, :k] = np.where(np.isfinite(jump), s.jump_cost * jump, np.inf)
        total = cost[:, np.newaxis] + step
        back[t] = np.argmin(total, axis=0)
        cost = total[back[t], np.arange(k + 1)] + local[t]
    state = int(np.argmin(cost))
    periods = np.full(frames, np.nan)
    for t in range(frames - 1, -1, -1):
        if state < k:
            periods[t] = lag[t, state]
        state = int(back[t, state])
    return periods


def sample_contour(
    track: PitchTrack, start_s: float, end_s: float, points: int
) -> tuple[FloatArray, FloatArray]:
    """F0 (NaN where unvoiced) and energy at ``points`` evenly spaced times of ``[start, end)``.

    Times are the centres of ``points`` equal parts, each read from the nearest frame: the
    contour is normalised to the span's duration, so a word spoken longer in one rendering is
    compared shape for shape, and its duration difference is not counted a second time.
    """
    if points < 1:
        raise ValueError(f"points must be >= 1, got {points}")
    if track.frames == 0:
        nothing = np.full(points, np.nan)
        return nothing, nothing.copy()
    times = start_s + (np.arange(points) + 0.5) / points * max(0.0, end_s - start_s)
    index = np.clip(np.rint(times / track.hop_s).astype(np.int64), 0, track.frames - 1)
    return track.f0_hz[index], track.energy_db[index]


def semitones(f0_hz: FloatArray, reference_hz: FloatArray) -> FloatArray:
    """``12 log2(f0 / reference)`` element by element (NaN where either is unvoiced)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        result: FloatArray = 12.0 * np.log2(f0_hz / reference_hz)
    return result


@dataclass(frozen=True)
class F0Comparison:
    """Two F0 contours of the same points, compared where both are voiced.

    A point further apart than ``octave_error_st`` (default 9: an octave less a fourth) is taken
    for a tracker octave error, not a difference of the renderings: two renderings of the same
    word by the same voice do not differ by most of an octave, while a tracker that halves or
    doubles one of them lands 12 semitones off. Such points are counted, not averaged.
    """

    rms_st: float | None  # None: no point voiced in both (outside octave errors)
    end_delta_st: float | None  # median difference of the last ``end_points`` compared points
    compared: int
    octave_errors: int


def compare_f0(
    f0_test: FloatArray,
    f0_reference: FloatArray,
    end_points: int = 3,
    octave_error_st: float = 9.0,
) -> F0Comparison:
    """``f0_test`` against ``f0_reference`` point by point (see ``F0Comparison``)."""
    delta = semitones(f0_test, f0_reference)
    both = np.isfinite(delta)
    octave = both & (np.abs(np.where(both, delta, 0.0)) > octave_error_st)
    kept = delta[both & ~octave]
    if len(kept) == 0:
        return F0Comparison(None, None, 0, int(octave.sum()))
    return F0Comparison(
        rms_st=float(np.sqrt(np.mean(kept**2))),
        end_delta_st=float(np.median(kept[-end_points:])),
        compared=len(kept),
        octave_errors=int(octave.sum()),
    )


def energy_distance(energy_a: FloatArray, energy_b: FloatArray, floor_db: float) -> float | None:
    """RMS difference in dB, each level floored at ``floor_db`` (silence is silence, however
    deep); None for empty contours."""
    if len(energy_a) == 0:
        return None
    delta = np.maximum(energy_a, floor_db) - np.maximum(energy_b, floor_db)
    return float(np.sqrt(np.mean(delta**2)))
