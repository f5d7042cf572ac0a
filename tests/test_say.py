from __future__ import annotations

import numpy as np
import pytest

from voxflow.engines.base import VoiceSettings, WindowPlan
from voxflow.engines.piper import PiperEngine
from voxflow.say import say, segment_text
from voxflow.text.buffer import ChunkingConfig, Strategy

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget."
)


def test_default_chunking_gives_a_short_first_segment() -> None:
    segments = segment_text(LONG, ChunkingConfig())
    assert len(segments) >= 2
    assert len(segments[0].text) < len(LONG) / 2
    assert segment_text(LONG, ChunkingConfig(strategy=Strategy.SENTENCE))[0].text == LONG


def test_streaming_reaches_first_audio_sooner_than_whole_sentences(engine: PiperEngine) -> None:
    settings = VoiceSettings(seed=3)
    streamed = say(engine, LONG, "joe", settings, ChunkingConfig(), WindowPlan())
    baseline = say(engine, LONG, "joe", settings, ChunkingConfig(strategy=Strategy.SENTENCE), None)
    # Ordering, not a timing goal: the first window of a short first segment must beat the
    # text stage plus a whole-sentence render by a wide margin on any machine.
    assert streamed.stats.ttfa_ms < baseline.stats.ttfa_ms / 2
    assert streamed.stats.chunks > streamed.stats.segments
    assert baseline.stats.chunks == baseline.stats.segments == 1


def test_same_segments_and_seed_give_the_same_audio_in_both_modes(engine: PiperEngine) -> None:
    settings = VoiceSettings(seed=11)
    chunking = ChunkingConfig(strategy=Strategy.FIXED)
    streamed = say(engine, LONG, "joe", settings, chunking, WindowPlan())
    whole = say(engine, LONG, "joe", settings, chunking, None)
    assert streamed.segments == whole.segments
    error = np.linalg.norm(streamed.audio - whole.audio) / np.linalg.norm(whole.audio)
    assert error < 1e-3


def test_nothing_to_say(engine: PiperEngine) -> None:
    with pytest.raises(ValueError, match="empty"):
        say(engine, "  ", "joe", VoiceSettings(), ChunkingConfig(), WindowPlan())
    with pytest.raises(ValueError, match="pronounceable"):
        say(engine, " — ", "joe", VoiceSettings(), ChunkingConfig(), WindowPlan())
