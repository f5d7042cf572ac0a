"""A cached phrase, its key and its bytes (runtime.cache.phrases), on the real voice's
renderings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from voxflow.engines.base import VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.runtime.cache.phrases import (
    CachedPhrase,
    ModelFingerprints,
    PhraseFormatError,
    decode_phrase,
    encode_phrase,
    phrase_key,
)
from voxflow.runtime.handover import lead_in


def _phrase(engine: PiperEngine, text: str = "One moment, let me check.") -> CachedPhrase:
    utterance = engine.prepare(text, "joe", VoiceSettings(seed=3))
    start = lead_in(utterance)
    return CachedPhrase.of(utterance, start, engine.render(utterance, start, utterance.num_frames))


def test_a_phrase_survives_its_bytes_sample_for_sample(engine: PiperEngine) -> None:
    phrase = _phrase(engine)
    back = decode_phrase(encode_phrase(phrase))
    assert np.array_equal(back.audio, phrase.audio)
    assert back.start_frame == phrase.start_frame
    u, v = phrase.utterance, back.utterance
    assert (v.text, v.voice, v.sample_rate, v.samples_per_frame, v.num_frames) == (
        u.text,
        u.voice,
        u.sample_rate,
        u.samples_per_frame,
        u.num_frames,
    )
    assert v.words == u.words and v.phonemes == u.phonemes
    assert np.array_equal(v.phoneme_frames, u.phoneme_frames)


def test_a_phrase_keeps_no_latents_and_cuts_windows_as_copies(engine: PiperEngine) -> None:
    phrase = _phrase(engine)
    assert phrase.utterance.latents.nbytes == 0
    hop = phrase.utterance.samples_per_frame
    start = phrase.start_frame
    window = phrase.window(start + 2, start + 5)
    assert np.array_equal(window, phrase.audio[2 * hop : 5 * hop])
    window[:] = 0.0  # what receives a window may change it; the cache's copy stays
    assert np.array_equal(phrase.window(start + 2, start + 5), phrase.audio[2 * hop : 5 * hop])
    assert phrase.window(start, start).size == 0
    with pytest.raises(ValueError, match="outside the cached frames"):
        phrase.window(start - 1, start + 1)
    with pytest.raises(ValueError, match="outside the cached frames"):
        phrase.window(start, phrase.utterance.num_frames + 1)


def test_audio_that_does_not_cover_the_frames_is_refused(engine: PiperEngine) -> None:
    phrase = _phrase(engine)
    with pytest.raises(ValueError, match="does not cover"):
        CachedPhrase(phrase.utterance, phrase.start_frame, phrase.audio[:-1])


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x01",
        b"\x02\x00\x00\x00\x00",
        b"\x01\x05\x00\x00\x00{bad}",
        b"\x01\x02\x00\x00\x00{}",
    ],
)
def test_bytes_that_are_not_a_phrase_are_a_format_error(data: bytes) -> None:
    with pytest.raises(PhraseFormatError):
        decode_phrase(data)


def test_the_key_changes_with_everything_that_changes_the_audio() -> None:
    base = ("PiperEngine", "f" * 64, "Hello there.", "joe", VoiceSettings(seed=1))
    key = phrase_key(*base)
    assert phrase_key(*base) == key
    variants = [
        ("Other", *base[1:]),
        (base[0], "e" * 64, *base[2:]),
        (*base[:2], "Hello there!", *base[3:]),
        (*base[:3], "other", base[4]),
        (*base[:4], replace(base[4], seed=2)),
        (*base[:4], replace(base[4], seed=None)),
        (*base[:4], replace(base[4], speed=1.1)),
        (*base[:4], replace(base[4], noise_scale=0.5)),
        (*base[:4], replace(base[4], noise_w=0.5)),
        (*base[:4], replace(base[4], speaker_id=1)),
        (*base, " General"),  # read on into the next word: said as a sentence's start
        (*base[:2], "Hello", *base[3:], " there."),  # the same text read, less of it said
    ]
    keys = {phrase_key(*variant) for variant in variants}
    assert key not in keys and len(keys) == len(variants)


def test_a_models_fingerprint_is_its_files_hash(tmp_path: Path) -> None:
    model, config = tmp_path / "m.onnx", tmp_path / "m.onnx.json"
    model.write_bytes(b"weights")
    config.write_bytes(b"{}")
    fingerprints = ModelFingerprints()
    first = fingerprints.of(model, config)
    assert ModelFingerprints().of(model, config) == first
    other = tmp_path / "n.onnx"
    other.write_bytes(b"other weights")
    assert ModelFingerprints().of(other, config) != first
