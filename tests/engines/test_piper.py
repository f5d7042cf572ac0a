from __future__ import annotations

import itertools

import numpy as np
import pytest

from voxflow.engines.base import VoiceNotFoundError, VoiceSettings, WindowPlan, stream
from voxflow.engines.piper import EngineSettings, PiperEngine
from voxflow.engines.registry import VoiceRegistry

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget."
)


def _relative_error(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _whole_and_streamed(
    engine: PiperEngine, text: str, plan: WindowPlan, seed: int = 7
) -> tuple[np.ndarray, np.ndarray, int]:
    """One whole-utterance render and one windowed render, from two separately prepared (but
    identical, same seed) utterances so that no flow output is shared between them."""
    whole_utterance = engine.prepare(text, "joe", VoiceSettings(seed=seed))
    whole = engine.render(whole_utterance, 0, whole_utterance.num_frames)
    utterance = engine.prepare(text, "joe", VoiceSettings(seed=seed))
    np.testing.assert_array_equal(utterance.latents, whole_utterance.latents)
    windows = list(plan.windows(utterance.num_frames))
    streamed = np.concatenate([engine.render(utterance, s, e) for s, e in windows])
    return whole, streamed, len(windows)


@pytest.mark.parametrize(
    "plan",
    [
        WindowPlan(),
        WindowPlan(first_frames=5, growth=0.0, max_frames=5),
        WindowPlan(40, 3.0, 300),
    ],
)
def test_streamed_windows_equal_the_whole_utterance(engine: PiperEngine, plan: WindowPlan) -> None:
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
    registry: VoiceRegistry, settings: EngineSettings
) -> None:
    # Guards the test above: it must be the overlap, not luck, that makes windows match.
    engine = PiperEngine(registry, settings)
    plan = WindowPlan(first_frames=10, growth=0.0, max_frames=10)
    whole, streamed, _ = _whole_and_streamed(engine, LONG, plan)
    assert _relative_error(streamed, whole) > 1e-2


def test_same_seed_same_audio_other_seed_other_audio(engine: PiperEngine) -> None:
    text = "Reproducible speech, please."
    first = np.concatenate(list(stream(engine, text, "joe", VoiceSettings(seed=1))))
    again = np.concatenate(list(stream(engine, text, "joe", VoiceSettings(seed=1))))
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
    assert list(stream(engine, " — ", "joe")) == []


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


def test_window_plan_starts_small_grows_with_what_was_rendered_and_covers_everything() -> None:
    plan = WindowPlan(first_frames=16, growth=4.0, max_frames=500)
    windows = list(plan.windows(3000))
    assert windows[0] == (0, 16)
    assert windows[-1][1] == 3000
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))
    sizes = [e - s for s, e in windows]
    # Each window is at most `growth` times what was rendered before it, and at most max_frames.
    assert sizes[:4] == [16, 64, 320, 500]
    assert all(size <= 500 for size in sizes)
    assert list(plan.windows(0)) == []
    assert list(plan.windows(20)) == [(0, 20)]  # a 4-frame tail is folded into the first window
    assert list(plan.windows(100)) == [(0, 16), (16, 100)]  # 20 left after 64: folded
    # With audio of earlier segments in hand, the first window need not be small.
    assert list(plan.windows(300, rendered_before=50)) == [(0, 300)]
    assert next(iter(plan.windows(900, rendered_before=50))) == (0, 200)


def test_flow_cache_serves_out_of_order_windows_exactly(engine: PiperEngine) -> None:
    utterance = engine.prepare(LONG, "joe", VoiceSettings(seed=9))
    whole = engine.render(utterance, 0, utterance.num_frames)
    fresh = engine.prepare(LONG, "joe", VoiceSettings(seed=9))
    hop = fresh.samples_per_frame
    late = engine.render(fresh, 300, 340)  # far ahead of anything rendered before
    early = engine.render(fresh, 0, 16)
    assert _relative_error(late, whole[300 * hop : 340 * hop]) < 1e-3
    assert _relative_error(early, whole[: 16 * hop]) < 1e-3
