"""Encoder benchmark: CPU cost per second of audio, and what a format adds to time-to-first-audio.

Every format encodes the same voice-rate signal in the engine's window size (16 frames of 256
samples at 22050 Hz), as the server does. Figures are medians over ``repeats`` runs after a
warm-up run, in one thread: codecs are opened with one thread each and the resampler runs in
numpy without BLAS, so CPU time is what one stream costs one core.

- cost: CPU milliseconds (process time, resampling included) per second of audio encoded;
- first audio: wall milliseconds from the start of the first ``encode()`` call to bytes that
  hold decodable audio, counting the windows it took (a codec that emits nothing for the first
  window waits for the next one, which is synthesis time, not encoding time);
- held: audio of the first window not yet decodable after its bytes (codec frame and lookahead
  plus the resampler's taps); it comes with the next window or the pause drain;
- priming: leading non-source audio a plain decoder plays first (MP3 and ADTS AAC carry no trim
  information), which a listener hears as extra delay on top of the first-audio time;
- pause padding: silence one ``drain()`` adds to push every sample out at a pause.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from voxflow import SUPPORTED_FORMATS, OutputFormat, StreamEncoder, parse_output_format

VOICE_RATE = 22050
WINDOW_SAMPLES = 16 * 256  # the engine's first window: 16 frames of 256 samples
TTFA_BUDGET_MS = 20.0  # what a compressed format may add to time-to-first-audio


@dataclass(frozen=True)
class EncoderBenchResult:
    """Medians for one output format."""

    format: str
    cpu_ms_per_audio_s: float
    first_audio_ms: float  # encode time until bytes with audio (all windows it took)
    windows_to_first_audio: int  # 1: the first window's bytes already hold audio
    first_window_bytes: int
    held_ms: float
    priming_ms: float
    pause_padding_ms: float
    kbps: float
    setup_ms: float  # creating the encoder (done when a context opens, before any text)
    runs: int

    @property
    def extra_ttfa_ms(self) -> float:
        """Time a format adds before the client has audio; infinite when the first window is not
        enough (the wait then depends on synthesis, not on the encoder)."""
        return self.first_audio_ms if self.windows_to_first_audio == 1 else math.inf

    def within_budget(self, budget_ms: float = TTFA_BUDGET_MS) -> bool:
        return self.extra_ttfa_ms <= budget_ms

    def as_dict(self) -> dict[str, object]:
        return {
            "format": self.format,
            "cpu_ms_per_audio_s": round(self.cpu_ms_per_audio_s, 3),
            "first_audio_ms": round(self.first_audio_ms, 3),
            "windows_to_first_audio": self.windows_to_first_audio,
            "first_window_bytes": self.first_window_bytes,
            "held_ms": round(self.held_ms, 1),
            "priming_ms": round(self.priming_ms, 1),
            "pause_padding_ms": round(self.pause_padding_ms, 1),
            "kbps": round(self.kbps, 1),
            "setup_ms": round(self.setup_ms, 3),
            "runs": self.runs,
        }


def speech_like_signal(
    seconds: float, rate: int = VOICE_RATE, seed: int = 0
) -> npt.NDArray[np.float32]:
    """A stand-in for a voice: a gliding harmonic source, 4 syllables a second, noise between.

    Codec cost depends on the signal (silence is cheap, noise dear), so this has the structure
    of speech rather than a test tone; pass real synthesis output to the bench for real figures.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * rate)) / rate
    pitch = 140 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 16))
    envelope = np.clip(np.sin(2 * np.pi * 4 * t), 0, None) ** 0.5
    noise = rng.standard_normal(len(t)) * (1 - envelope) * 0.05
    signal = 0.25 * voiced * envelope + noise
    return signal.astype(np.float32)


def _windows(audio: npt.NDArray[np.float32], size: int) -> list[npt.NDArray[np.float32]]:
    return [audio[start : start + size] for start in range(0, len(audio), size)]


@dataclass(frozen=True)
class _Run:
    cpu_s: float
    first_audio_s: float
    windows: int
    first_window_bytes: int
    held_samples: int
    priming_samples: int
    padding_samples: int
    total_bytes: int
    setup_s: float


def _run_once(
    fmt: OutputFormat, windows: Sequence[npt.NDArray[np.float32]], source_rate: int
) -> _Run:
    # Cost: a whole stream, as the server encodes it.
    started = time.perf_counter()
    encoder = StreamEncoder(fmt, source_rate)
    setup_s = time.perf_counter() - started
    cpu_start = time.process_time()
    total = 0
    for window in windows:
        total += len(encoder.encode(window))
    total += len(encoder.finish())
    cpu_s = time.process_time() - cpu_start

    # First audio: a fresh stream, timed from its first encode() call.
    encoder = StreamEncoder(fmt, source_rate)
    priming = encoder.inserted_samples
    first_bytes = 0
    used = 0
    wall = 0.0
    for index, window in enumerate(windows):
        started = time.perf_counter()
        data = encoder.encode(window)
        wall += time.perf_counter() - started
        if index == 0:
            first_bytes = len(data)
            # Every output instant inside the window's span (what a whole stream of it yields).
            source_out = -(-len(window) * fmt.sample_rate // source_rate)
            held = source_out - (encoder.samples_out - encoder.inserted_samples)
        used = index + 1
        if encoder.samples_out > 0:
            break

    # Pause padding: the silence one drain() adds after a window of speech.
    encoder = StreamEncoder(fmt, source_rate)
    encoder.encode(windows[0])
    before = encoder.inserted_samples
    encoder.drain()
    return _Run(
        cpu_s=cpu_s,
        first_audio_s=wall,
        windows=used,
        first_window_bytes=first_bytes,
        held_samples=max(held, 0),
        priming_samples=priming,
        padding_samples=encoder.inserted_samples - before,
        total_bytes=total,
        setup_s=setup_s,
    )


def run_encoder_bench(
    formats: Sequence[str] = SUPPORTED_FORMATS,
    seconds: float = 5.0,
    repeats: int = 5,
    audio: npt.NDArray[np.float32] | None = None,
    source_rate: int = VOICE_RATE,
    window: int = WINDOW_SAMPLES,
    progress: Callable[[str], None] | None = None,
) -> list[EncoderBenchResult]:
    """Benchmark each format on ``audio`` (default: ``seconds`` of a speech-like signal)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    signal = speech_like_signal(seconds, source_rate) if audio is None else audio
    if len(signal) == 0:
        raise ValueError("the bench needs some audio")
    duration_s = len(signal) / source_rate
    windows = _windows(np.asarray(signal, dtype=np.float32), window)
    results = []
    for name in formats:
        fmt = parse_output_format(name)
        if progress is not None:
            progress(name)
        _run_once(fmt, windows, source_rate)  # warm-up: first use of a codec loads its tables
        runs = [_run_once(fmt, windows, source_rate) for _ in range(repeats)]
        rate = fmt.sample_rate
        results.append(
            EncoderBenchResult(
                format=name,
                cpu_ms_per_audio_s=statistics.median(1000 * r.cpu_s / duration_s for r in runs),
                first_audio_ms=statistics.median(1000 * r.first_audio_s for r in runs),
                windows_to_first_audio=max(r.windows for r in runs),
                first_window_bytes=runs[0].first_window_bytes,
                held_ms=1000 * runs[0].held_samples / rate,
                priming_ms=1000 * runs[0].priming_samples / rate,
                pause_padding_ms=1000 * runs[0].padding_samples / rate,
                kbps=statistics.median(8 * r.total_bytes / duration_s / 1000 for r in runs),
                setup_ms=statistics.median(1000 * r.setup_s for r in runs),
                runs=len(runs),
            )
        )
    return results


def latency_violations(
    results: Sequence[EncoderBenchResult], budget_ms: float = TTFA_BUDGET_MS
) -> list[str]:
    """One line per format that adds more than ``budget_ms`` before the first audio bytes."""
    problems = []
    for r in results:
        if r.windows_to_first_audio > 1:
            problems.append(
                f"{r.format}: no audio until window {r.windows_to_first_audio} "
                f"({r.first_audio_ms:.2f} ms of encoding, plus the synthesis of the extra windows)"
            )
        elif r.first_audio_ms > budget_ms:
            problems.append(
                f"{r.format}: first audio after {r.first_audio_ms:.2f} ms > {budget_ms}"
            )
    return problems


def format_table(results: Sequence[EncoderBenchResult], budget_ms: float = TTFA_BUDGET_MS) -> str:
    """A Markdown table, ready for docs/benchmarks.md; the last column checks the TTFA budget."""
    lines = [
        "| format | CPU ms / audio s | first audio ms | windows | first bytes | held ms "
        f"| priming ms | pause pad ms | kbps | setup ms | TTFA + <= {budget_ms:g} ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        verdict = "ok" if r.within_budget(budget_ms) else "**over**"
        lines.append(
            f"| {r.format} | {r.cpu_ms_per_audio_s:.2f} | {r.first_audio_ms:.3f} | "
            f"{r.windows_to_first_audio} | {r.first_window_bytes} | {r.held_ms:.1f} | "
            f"{r.priming_ms:.1f} | {r.pause_padding_ms:.1f} | {r.kbps:.1f} | {r.setup_ms:.3f} | "
            f"{verdict} |"
        )
    return "\n".join(lines)
