"""Word timings of the real voice against its audio: do the word spans sit on the words' sound?

The reference is the audio itself: short-time energy in 5 ms frames. "Speech" is a frame above
-60 dBFS, the threshold the seam joiner uses: the release of a final stop ("breakfast") sits near
-55 dBFS, and a -45 dBFS threshold would end the speech before the word does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pytest

from voxflow.engines.base import Utterance, VoiceSettings
from voxflow.engines.piper import PiperEngine

SENTENCES = (
    "The quick brown fox jumps over the lazy dog.",
    "We walked to the river after breakfast.",
    "My brother carried the basket, the blanket, and the old red kite.",
    "Please arrive ten minutes early so the front desk can update your details.",
    "Parking is free in the garage behind the building.",
    "Is there anything else I can help you with today?",
    "She sells seashells by the seashore every summer.",
    "The children laughed as the puppy chased its tail.",
    "Nobody expected the rain to arrive so early.",
    "Thanks for calling the downtown clinic.",
)
# Sentences whose first word starts with a stressed vowel: espeak writes the stress mark before
# the vowel, and the voice gives that mark frames of its own.
STRESSED_VOWEL_FIRST = (
    "After the storm, the village was quiet.",
    "Every evening the old man feeds the pigeons.",
    "Apples grow on the hill behind the house.",
    "Under the bridge, the water was cold.",
)
SEEDS = (0, 1)
STOPS = frozenset({"p", "t", "k", "b", "d", "ɡ", "g", "ʔ"})
FRAME_MS = 5.0
SPEECH_DB = -60.0
SILENT_DB = -45.0  # "low energy" for the boundary test: well below speech, above the floor


@dataclass(frozen=True)
class Spoken:
    utterance: Utterance
    audio: npt.NDArray[np.float32]

    @property
    def frame(self) -> int:
        return round(FRAME_MS * self.utterance.sample_rate / 1000)

    def levels(self) -> npt.NDArray[np.float64]:
        """dBFS of each whole frame (floored at -100 so exact zeros do not dominate a mean)."""
        count = len(self.audio) // self.frame
        frames = self.audio[: count * self.frame].astype(np.float64).reshape(count, self.frame)
        levels: npt.NDArray[np.float64] = np.maximum(
            10 * np.log10(np.mean(frames * frames, axis=1) + 1e-20), -100.0
        )
        return levels

    def level_at(self, sample: int) -> float:
        levels = self.levels()
        return float(levels[min(len(levels) - 1, sample // self.frame)])

    def speech_edges(self) -> tuple[int, int]:
        loud = np.flatnonzero(self.levels() > SPEECH_DB)
        return int(loud[0]) * self.frame, (int(loud[-1]) + 1) * self.frame

    def ms(self, samples: int) -> float:
        return 1000.0 * samples / self.utterance.sample_rate


def speak(engine: PiperEngine, text: str, seed: int) -> Spoken:
    utterance = engine.prepare(text, "joe", VoiceSettings(seed=seed))
    return Spoken(utterance, engine.render(utterance, 0, utterance.num_frames))


@pytest.fixture(scope="module")
def spoken(engine: PiperEngine) -> list[Spoken]:
    return [speak(engine, text, seed) for text in SENTENCES for seed in SEEDS]


def test_word_boundaries_fall_in_quieter_audio_than_random_points(spoken: list[Spoken]) -> None:
    rng = np.random.default_rng(0)
    at_boundaries: list[float] = []
    at_random: list[float] = []
    for item in spoken:
        spf = item.utterance.samples_per_frame
        words = item.utterance.words
        assert len(words) >= 5
        for left, right in itertools.pairwise(words):
            # The middle of the gap between two words (their shared edge when there is none).
            at_boundaries.append(item.level_at((left.end_frame + right.start_frame) * spf // 2))
        inside = rng.integers(words[0].start_frame * spf, words[-1].end_frame * spf, size=40)
        at_random.extend(item.level_at(int(p)) for p in inside)
    boundary_db, random_db = float(np.mean(at_boundaries)), float(np.mean(at_random))
    assert boundary_db < random_db - 6.0
    silent_boundaries = float(np.mean(np.array(at_boundaries) < SILENT_DB))
    silent_random = float(np.mean(np.array(at_random) < SILENT_DB))
    assert silent_boundaries > 1.5 * silent_random


def final_closure(utterance: Utterance, end_frame: int) -> int:
    """Frames of the stop consonant that ends at ``end_frame``, or 0 for any other phoneme.

    The voice leaves a final stop unreleased more often than not: its frames are the silent
    closure ("clinic." ends in 8 frames of silence that belong to the "k").
    """
    edges = np.cumsum(utterance.phoneme_frames)
    last = int(np.searchsorted(edges, end_frame))
    if utterance.phonemes[last] in STOPS:
        return int(utterance.phoneme_frames[last])
    return 0


def test_the_last_word_ends_where_the_speech_ends(spoken: list[Spoken]) -> None:
    errors = []
    for item in spoken:
        _, speech_end = item.speech_edges()
        spf = item.utterance.samples_per_frame
        end_frame = item.utterance.words[-1].end_frame
        word_end = end_frame * spf
        error = item.ms(word_end - speech_end)
        closure = item.ms(final_closure(item.utterance, end_frame) * spf)
        # Late by no more than 50 ms plus a silent final closure; never early by more than 50.
        assert -50.0 < error < 50.0 + closure, (item.utterance.text, error, closure)
        errors.append(error)
    # And most end right with the sound, not just within the bounds.
    assert float(np.median(np.abs(errors))) < 25.0, errors


def test_the_first_word_starts_where_the_speech_starts(spoken: list[Spoken]) -> None:
    for item in spoken:
        onset, _ = item.speech_edges()
        word_start = item.utterance.words[0].start_frame * item.utterance.samples_per_frame
        assert abs(item.ms(word_start - onset)) < 40.0, item.utterance.text


@pytest.mark.parametrize("seed", SEEDS)
def test_a_word_starting_with_a_stressed_vowel_starts_with_its_sound(
    engine: PiperEngine, seed: int
) -> None:
    for text in STRESSED_VOWEL_FIRST:
        item = speak(engine, text, seed)
        onset, _ = item.speech_edges()
        word_start = item.utterance.words[0].start_frame * item.utterance.samples_per_frame
        assert abs(item.ms(word_start - onset)) < 30.0, text
