from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from voxflow.engines.base import VoiceNotFoundError, VoiceSettings
from voxflow.engines.piper import EngineSettings, PiperEngine
from voxflow.engines.registry import VoiceRegistry
from voxflow.engines.split_cache import SplitCache

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget."
)


def _relative_error(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _windows(num_frames: int, first: int, size: int) -> list[tuple[int, int]]:
    """``first`` frames, then windows of ``size``, covering ``[0, num_frames)``."""
    edges = [0, *range(first, num_frames, size), num_frames]
    return [(a, b) for a, b in itertools.pairwise(edges) if b > a]


def _windowed(engine: PiperEngine, text: str, settings: VoiceSettings) -> np.ndarray:
    utterance = engine.prepare(text, "joe", settings)
    windows = _windows(utterance.num_frames, 16, 32)
    return np.concatenate([engine.render(utterance, s, e) for s, e in windows])


def _whole_and_streamed(
    engine: PiperEngine, text: str, plan: tuple[int, int], seed: int = 7
) -> tuple[np.ndarray, np.ndarray, int]:
    """One whole-utterance render and one windowed render, from two separately prepared (but
    identical, same seed) utterances so that no flow output is shared between them."""
    whole_utterance = engine.prepare(text, "joe", VoiceSettings(seed=seed))
    whole = engine.render(whole_utterance, 0, whole_utterance.num_frames)
    utterance = engine.prepare(text, "joe", VoiceSettings(seed=seed))
    np.testing.assert_array_equal(utterance.latents, whole_utterance.latents)
    windows = _windows(utterance.num_frames, *plan)
    streamed = np.concatenate([engine.render(utterance, s, e) for s, e in windows])
    return whole, streamed, len(windows)


@pytest.mark.parametrize(
    "plan",
    [(16, 32), (5, 5), (40, 256)],  # (first window, later windows) in frames
)
def test_streamed_windows_equal_the_whole_utterance(
    engine: PiperEngine, plan: tuple[int, int]
) -> None:
    whole, streamed, windows = _whole_and_streamed(engine, LONG, plan)
    assert windows > 1
    assert streamed.shape == whole.shape
    assert _relative_error(streamed, whole) < 1e-3


@pytest.mark.parametrize(
    "settings",
    [
        EngineSettings(decoder_overlap_frames=2, flow_overlap_frames=24),
        EngineSettings(decoder_overlap_frames=10, flow_overlap_frames=0, flow_chunk_frames=1),
    ],
)
def test_too_little_overlap_in_either_stage_breaks_equality(
    registry: VoiceRegistry, settings: EngineSettings, split_cache: SplitCache | None
) -> None:
    # Guards the test above: it must be the overlap, not luck, that makes windows match.
    engine = PiperEngine(registry, dataclasses.replace(settings, split_cache=split_cache))
    whole, streamed, _ = _whole_and_streamed(engine, LONG, (10, 10))
    assert _relative_error(streamed, whole) > 1e-2


def test_same_seed_same_audio_other_seed_other_audio(engine: PiperEngine) -> None:
    text = "Reproducible speech, please."
    first, again = (_windowed(engine, text, VoiceSettings(seed=1)) for _ in range(2))
    other = engine.prepare(text, "joe", VoiceSettings(seed=2))
    np.testing.assert_array_equal(first, again)
    other_audio = engine.render(other, 0, other.num_frames)
    assert other_audio.shape != first.shape or not np.allclose(other_audio, first)


def test_speed_changes_duration(engine: PiperEngine) -> None:
    text = "Speed changes how long this sentence lasts."
    normal = engine.prepare(text, "joe", VoiceSettings(seed=3, noise_w=0.0))
    fast = engine.prepare(text, "joe", VoiceSettings(seed=3, noise_w=0.0, speed=2.0))
    slow = engine.prepare(text, "joe", VoiceSettings(seed=3, noise_w=0.0, speed=0.5))
    assert fast.num_frames < 0.65 * normal.num_frames
    assert slow.num_frames > 1.6 * normal.num_frames


def test_utterance_shape_and_audio_are_sane(engine: PiperEngine) -> None:
    utterance = engine.prepare("Hello world.", "joe", VoiceSettings(seed=0))
    assert utterance.sample_rate == 22050
    assert utterance.samples_per_frame == 256
    assert utterance.phonemes[0] == "^" and utterance.phonemes[-1] == "$"
    assert len(utterance.phoneme_frames) == len(utterance.phonemes)
    assert int(utterance.phoneme_frames.sum()) == utterance.num_frames
    audio = engine.render(utterance, 0, utterance.num_frames)
    assert audio.dtype == np.float32
    assert 0.02 < float(np.sqrt(np.mean(audio**2))) < 0.5
    assert float(np.abs(audio).max()) <= 1.0
    assert 0.5 < utterance.duration_s < 2.5


def test_words_map_to_ordered_frame_ranges(engine: PiperEngine) -> None:
    text = "In 1999, Dr. Jones paid $3.50 for coffee."
    utterance = engine.prepare(text, "joe", VoiceSettings(seed=0))
    words = [w.word for w in utterance.words]
    assert words == ["In", "1999", "Dr", "Jones", "paid", "$3.50", "for", "coffee"]
    previous_end = 0
    for span in utterance.words:
        assert text[span.char_start : span.char_end] == span.word
        assert previous_end <= span.start_frame < span.end_frame <= utterance.num_frames
        previous_end = span.end_frame
    by_word = {w.word: w.end_frame - w.start_frame for w in utterance.words}
    # "1999" is spoken as three words and "$3.50" as five: far longer than "In" or "for".
    assert by_word["1999"] > 3 * by_word["In"]
    assert by_word["$3.50"] > 3 * by_word["for"]


def test_text_without_phonemes_gives_an_empty_utterance(engine: PiperEngine) -> None:
    utterance = engine.prepare(" — ", "joe", VoiceSettings())
    assert utterance.num_frames == 0


def test_bad_requests_fail_clearly(engine: PiperEngine) -> None:
    utterance = engine.prepare("Hi.", "joe", VoiceSettings(seed=0))
    with pytest.raises(ValueError, match="window"):
        engine.render(utterance, 0, utterance.num_frames + 1)
    with pytest.raises(ValueError, match="window"):
        engine.render(utterance, 5, 5)
    with pytest.raises(VoiceNotFoundError, match=r"unknown voice 'nope'.*joe"):
        engine.prepare("Hi.", "nope", VoiceSettings())
    with pytest.raises(ValueError, match="single speaker"):
        engine.prepare("Hi.", "joe", VoiceSettings(speaker_id=3))
    with pytest.raises(ValueError, match="speed"):
        VoiceSettings(speed=0.0)


def test_flow_cache_serves_out_of_order_windows_exactly(engine: PiperEngine) -> None:
    utterance = engine.prepare(LONG, "joe", VoiceSettings(seed=9))
    whole = engine.render(utterance, 0, utterance.num_frames)
    fresh = engine.prepare(LONG, "joe", VoiceSettings(seed=9))
    hop = fresh.samples_per_frame
    late = engine.render(fresh, 300, 340)  # far ahead of anything rendered before
    early = engine.render(fresh, 0, 16)
    assert _relative_error(late, whole[300 * hop : 340 * hop]) < 1e-3
    assert _relative_error(early, whole[: 16 * hop]) < 1e-3
