"""One-shot synthesis of a whole text, as ``voxflow say`` does it, with timing figures.

The text goes through the same TextBuffer and normalizer as a streaming session (so ``--chunking``
compares the strategies), then each segment is prepared and rendered in growing windows, or in one
run per segment with ``streaming=False`` (the sentence-level baseline: same segments, same seed,
same audio).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from voxflow.engines.base import Engine, FloatArray, VoiceSettings, WindowPlan
from voxflow.text.buffer import ChunkingConfig, Segment, TextBuffer
from voxflow.text.normalize import NormalizationMode, Normalizer


@dataclass(frozen=True)
class SayStats:
    """Timings of one synthesis; ``ttfa_ms`` runs from the start (segmentation and phonemization
    included) to the first rendered audio."""

    ttfa_ms: float
    synth_ms: float
    audio_ms: float
    rtf: float
    segments: int
    chunks: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "ttfa_ms": round(self.ttfa_ms, 2),
            "synth_ms": round(self.synth_ms, 2),
            "audio_ms": round(self.audio_ms, 2),
            "rtf": round(self.rtf, 4),
            "segments": self.segments,
            "chunks": self.chunks,
        }


@dataclass(frozen=True)
class SayResult:
    sample_rate: int
    audio: FloatArray
    segments: tuple[Segment, ...]
    stats: SayStats


def segment_text(text: str, chunking: ChunkingConfig) -> list[Segment]:
    """All segments of a complete text, as a session would produce them."""
    buffer = TextBuffer(chunking)
    return [*buffer.feed(text), *buffer.flush()]


def _without_leads(chunking: ChunkingConfig) -> ChunkingConfig:
    """``say`` renders one segment after the other. A server cuts a long first sentence early
    and renders it whole beside that first piece (a lead and its takeover, which need the
    scheduler's two lanes); rendered one after the other, the cut would be heard, so ``say``
    keeps the first sentence whole."""
    return replace(chunking, lead_cost=None)


def render_segments(
    engine: Engine,
    segments: list[Segment],
    voice: str,
    settings: VoiceSettings,
    plan: WindowPlan | None,
    normalizer: Normalizer | None = None,
    normalization: NormalizationMode = NormalizationMode.AUTO,
) -> Iterator[tuple[int, FloatArray]]:
    """(sample rate, chunk) in playback order; ``plan=None`` renders each segment in one run.

    Each segment gets its own seed derived from ``settings.seed`` so that a seeded run is
    reproducible whatever the window plan.
    """
    normalizer = normalizer or Normalizer()
    rendered = 0
    for index, segment in enumerate(segments):
        segment_settings = (
            settings if settings.seed is None else replace(settings, seed=settings.seed + index)
        )
        spoken = normalizer.normalize(segment.text, normalization).text
        utterance = engine.prepare(spoken, voice, segment_settings)
        if utterance.num_frames == 0:
            continue
        windows = (
            [(0, utterance.num_frames)]
            if plan is None
            else plan.windows(utterance.num_frames, rendered_before=rendered)
        )
        for start, end in windows:
            yield utterance.sample_rate, engine.render(utterance, start, end)
        rendered += utterance.num_frames


def say(
    engine: Engine,
    text: str,
    voice: str,
    settings: VoiceSettings,
    chunking: ChunkingConfig,
    plan: WindowPlan | None,
    clock: Callable[[], float] = time.perf_counter,
    normalizer: Normalizer | None = None,
    normalization: NormalizationMode = NormalizationMode.AUTO,
) -> SayResult:
    """Synthesize ``text`` completely and measure it (see ``SayStats``)."""
    started = clock()
    segments = segment_text(text, _without_leads(chunking))
    if not segments:
        raise ValueError("nothing to say: the text is empty")
    first_audio: float | None = None
    chunks: list[FloatArray] = []
    sample_rate = engine.voice_info(voice).sample_rate
    chunks_out = render_segments(engine, segments, voice, settings, plan, normalizer, normalization)
    for rate, chunk in chunks_out:
        if first_audio is None:
            first_audio = clock()
        sample_rate = rate
        chunks.append(chunk)
    finished = clock()
    if first_audio is None:
        raise ValueError("nothing to say: the text has no pronounceable words")
    audio = np.concatenate(chunks).astype(np.float32, copy=False)
    audio_ms = 1000.0 * len(audio) / sample_rate
    synth_ms = 1000.0 * (finished - started)
    stats = SayStats(
        ttfa_ms=1000.0 * (first_audio - started),
        synth_ms=synth_ms,
        audio_ms=audio_ms,
        rtf=synth_ms / audio_ms,
        segments=len(segments),
        chunks=len(chunks),
    )
    return SayResult(sample_rate, audio, tuple(segments), stats)
