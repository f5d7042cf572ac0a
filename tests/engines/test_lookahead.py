"""A text stage that reads past what it says (``voxflow.engines.lookahead``): the invariants of
``spoken_part`` on hand-made utterances, and what Kokoro's text stage makes of a lead read on
into the next word: the same words, said as the start of a sentence rather than its end."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from voxflow.engines.base import Utterance, VoiceSettings, WordSpan
from voxflow.engines.kokoro.engine import F0_ROW, KokoroEngine
from voxflow.engines.lookahead import prepare_reading_on, spoken_part

TEXT = "Sure, I can"


def _utterance(gaps: tuple[int, int]) -> Utterance:
    """Three words of ``TEXT``, 10 frames each, ``gaps`` frames of pause after the first two;
    a phoneme a word, a pause a phoneme of a frame each (as a pause of single frames cut
    anywhere), and 2 frames of silence at each end."""
    words, phoneme_frames, at = [], [2], 2
    for (word, start), gap in zip((("Sure", 0), ("I", 6), ("can", 8)), (*gaps, 2), strict=True):
        words.append(WordSpan(word, start, start + len(word), at, at + 10))
        phoneme_frames += [10, *([1] * gap)]
        at += 10 + gap
    frames = at
    latents = np.arange(3 * frames, dtype=np.float32).reshape(3, frames)
    return Utterance(
        text=TEXT,
        voice="v",
        sample_rate=1000,
        samples_per_frame=10,
        latents=latents,
        phonemes=tuple(f"p{i}" for i in range(len(phoneme_frames))),
        phoneme_frames=np.array(phoneme_frames, dtype=np.int64),
        words=tuple(words),
        onset_frames=2,
    )


@pytest.mark.parametrize("gaps", [(8, 0), (7, 3), (0, 0)])
@pytest.mark.parametrize("chars", [4, 5, 6, 7, 8, 11])
def test_the_spoken_part_is_the_words_said_and_their_frames(
    gaps: tuple[int, int], chars: int
) -> None:
    whole = _utterance(gaps)
    part = spoken_part(whole, chars)
    own = [w for w in whole.words if w.char_end <= chars]
    assert part.words == tuple(own) and part.text == TEXT[:chars]
    if len(own) == len(whole.words):
        assert part is whole
        return
    following = whole.words[len(own)].start_frame
    # Never a frame of the next word's; halfway through the pause before it.
    assert own[-1].end_frame <= part.num_frames <= following
    assert part.num_frames == own[-1].end_frame + (following - own[-1].end_frame) // 2
    np.testing.assert_array_equal(part.latents, whole.latents[:, : part.num_frames])
    assert part.latents.flags.c_contiguous
    # Whole phonemes, the utterance's first ones.
    assert int(part.phoneme_frames.sum()) == part.num_frames
    assert part.phonemes == whole.phonemes[: len(part.phonemes)]
    np.testing.assert_array_equal(part.phoneme_frames, whole.phoneme_frames[: len(part.phonemes)])


def test_a_part_ends_at_a_phoneme_edge_short_of_halfway() -> None:
    whole = _utterance((8, 0))
    # The pause as one phoneme of 8 frames: halfway is inside it, so the part ends at its start.
    pause = replace(
        whole,
        phonemes=(*whole.phonemes[:2], "pause", *whole.phonemes[10:]),
        phoneme_frames=np.array([2, 10, 8, 10, 10, 1, 1], dtype=np.int64),
    )
    assert spoken_part(pause, 5).num_frames == whole.words[0].end_frame


def test_a_part_needs_a_word() -> None:
    with pytest.raises(ValueError, match="no word"):
        spoken_part(_utterance((8, 0)), 3)


class _Reader:
    """An engine whose text stage reads "Sure, I" as one word (as a reading that runs a word
    across the cut would), every other text a word per run of neither space nor period."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def prepare(
        self, text: str, voice: str, settings: VoiceSettings, threads: int | None = None
    ) -> Utterance:
        self.read.append(text)
        utterance = _utterance((8, 0))
        spans = [(m.start(), m.end()) for m in re.finditer(r"[^\s.]+", text)]
        if text.startswith("Sure, I"):
            spans = [(0, 7), *spans[2:]]
        words = tuple(
            WordSpan(text[a:b], a, b, 2 + 12 * i, 12 + 12 * i) for i, (a, b) in enumerate(spans)
        )
        phoneme_frames = [2, *([10, 2] * len(words)), 2]  # a word a phoneme, then a pause
        return replace(
            utterance,
            text=text,
            words=words,
            latents=np.zeros((3, sum(phoneme_frames)), dtype=np.float32),
            phonemes=tuple(f"p{i}" for i in range(len(phoneme_frames))),
            phoneme_frames=np.array(phoneme_frames, dtype=np.int64),
        )


def test_a_reading_that_does_not_part_at_the_cut_is_read_alone() -> None:
    engine = _Reader()
    settings = VoiceSettings()
    part = prepare_reading_on(engine, "Sure, I", " can", "v", settings)  # type: ignore[arg-type]
    assert engine.read == ["Sure, I can"] and [w.word for w in part.words] == ["Sure, I"]
    engine.read.clear()
    # "Sure," read on into " I" would say "Sure,I" or nothing: it is read alone instead.
    alone = prepare_reading_on(engine, "Sure,", " I", "v", settings)  # type: ignore[arg-type]
    assert engine.read == ["Sure, I", "Sure,"] and alone.text == "Sure,"
    engine.read.clear()
    prepare_reading_on(engine, "...", " can", "v", settings)  # type: ignore[arg-type]
    assert engine.read == ["... can", "..."]  # no word before the cut
    engine.read.clear()
    prepare_reading_on(engine, "Sure,", "", "v", settings)  # type: ignore[arg-type]
    assert engine.read == ["Sure,"]


@pytest.mark.parametrize(
    ("lead", "following"),
    [("Thanks for calling,", " have"), ("Sure, I can book the meeting", " room"), ("I'll", " do")],
)
def test_a_kokoro_lead_read_on_renders_whole(
    kokoro_engine: KokoroEngine, lead: str, following: str
) -> None:
    """Kokoro's decoder reads its frames in pairs: a part cut inside the gap between two
    English words keeps its frames whole, and renders."""
    part = prepare_reading_on(kokoro_engine, lead, following, "kokoro:af_heart", VoiceSettings())
    assert part.num_frames % 2 == 0 and part.text == lead
    assert part.num_frames >= part.words[-1].end_frame
    audio = kokoro_engine.render(part, 0, part.num_frames)
    assert len(audio) == part.num_samples and float(np.abs(audio).max()) > 0.05


LEAD, NEXT = "はい、来週の月曜日に", "会議室を"
KUMO = "kokoro:jm_kumo"


def test_kokoro_plans_a_lead_read_on_as_its_sentences_start(kokoro_engine: KokoroEngine) -> None:
    settings = VoiceSettings()
    alone = kokoro_engine.prepare(LEAD, KUMO, settings)
    read_on = prepare_reading_on(kokoro_engine, LEAD, NEXT, KUMO, settings)
    whole = kokoro_engine.prepare(LEAD + NEXT, KUMO, settings)
    # The same words, each where the longer text's text stage put it.
    assert [w.word for w in read_on.words] == [w.word for w in alone.words]
    assert read_on.words == whole.words[: len(read_on.words)]
    assert read_on.text == LEAD
    np.testing.assert_array_equal(read_on.latents, whole.latents[:, : read_on.num_frames])
    # Alone, its last word is said as a sentence's last: held longer, then silence.
    last_alone, last_read_on = alone.words[-1], read_on.words[-1]
    span = last_alone.end_frame - last_alone.start_frame
    assert span > last_read_on.end_frame - last_read_on.start_frame
    assert alone.num_frames - last_alone.end_frame > read_on.num_frames - last_read_on.end_frame
    # And its pitch falls at the end, where read on it does not fall as far.
    tail = slice(last_read_on.start_frame, last_read_on.end_frame)
    tail_alone = slice(last_alone.start_frame, last_alone.end_frame)
    voiced_read_on = read_on.latents[F0_ROW, tail][read_on.latents[F0_ROW, tail] > 0]
    voiced_alone = alone.latents[F0_ROW, tail_alone][alone.latents[F0_ROW, tail_alone] > 0]
    assert float(np.median(voiced_alone)) < float(np.median(voiced_read_on))
    # Nothing to read on into: the text stage on the text alone.
    plain = prepare_reading_on(kokoro_engine, LEAD, "", KUMO, settings)
    np.testing.assert_array_equal(plain.latents, alone.latents)
