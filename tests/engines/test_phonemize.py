from __future__ import annotations

import pytest

from tests.support.traffic import corpus_texts
from voxflow.engines.phonemize import (
    _ESPEAK,
    Phonemizer,
    align_words,
    espeak_sentences,
    text_words,
)


def test_text_words_strip_edge_punctuation_but_keep_offsets() -> None:
    text = '"Hello," she said (twice) -- at 3:30 p.m. in the U.S.'
    words = text_words(text)
    assert [w.word for w in words] == [
        "Hello", "she", "said", "twice", "at", "3:30", "p.m.", "in", "the", "U.S.",
    ]  # fmt: skip
    for word in words:
        assert text[word.char_start : word.char_end] == word.word


def test_alignment_gives_each_word_its_own_phonemes() -> None:
    phonemizer = Phonemizer("en-us")
    result = phonemizer.phonemize("Call me at 1999 now.")
    spoken = ["".join(result.phonemes[s:e]) for s, e in result.word_phonemes]
    assert spoken[0].startswith("k")  # "call"
    assert "n" in spoken[-1] and "aʊ" in spoken[-1]  # "now"
    # "1999" is three spoken words; all of them belong to the one text word.
    assert spoken[3].count(" ") == 2


def test_alignment_ranges_are_contiguous_and_ordered() -> None:
    phonemes = list("ab cd ef")
    ranges = align_words(phonemes, [list("ab"), list("zz"), list("cdef")])
    assert ranges[0] == (0, 2)
    assert ranges[1][0] == ranges[1][1] == 2  # a word espeak dropped: empty, in place
    assert ranges[2] == (3, 8)
    assert align_words(phonemes, []) == []


def test_sentences_are_joined_into_one_phoneme_sequence() -> None:
    phonemizer = Phonemizer("en-us")
    phonemes = phonemizer.phonemes("One. Two!")
    text = "".join(phonemes)
    assert text.count(".") == 1 and text.endswith("!")
    assert " " in text


def test_raw_phoneme_blocks_pass_through_and_keep_their_word() -> None:
    phonemizer = Phonemizer("en-us")
    result = phonemizer.phonemize("I love [[ vˈɒksfloʊ ]] today.")
    assert "vˈɒksfloʊ" in "".join(result.phonemes)
    spoken = {
        w.word: "".join(result.phonemes[s:e])
        for w, (s, e) in zip(result.words, result.word_phonemes, strict=True)
    }
    assert spoken["vˈɒksfloʊ"] == "vˈɒksfloʊ"
    assert spoken["today"].startswith("t")


# -- espeak-ng as piper calls it, without a voice change per call --------------------------------

_FRENCH_WORD = "The café's déjà vu, naïvely: c'est la vie!"


def _piper_sentences(
    voice: str, text: str, clusters: set[tuple[str, ...]] | None = None
) -> list[list[str]]:
    from piper.phonemize_espeak import EspeakPhonemizer  # noqa: PLC0415

    # piper's constructor re-runs espeak-ng's initialisation. Re-initialising it hundreds of
    # times in one process now and then gave a French reply without its stress marks (1 clean-
    # clone run in 10), as if espeak-ng read memory its re-initialisation had freed. voxflow
    # initialises it once; piper's ``phonemize`` keeps no state of its own, so it runs here on
    # the espeak-ng that voxflow loaded, without its constructor.
    espeak_sentences(voice, "")  # loads espeak-ng, once per process
    piper = EspeakPhonemizer.__new__(EspeakPhonemizer)
    with _ESPEAK.lock:  # piper's own call sets the voice: ours must know it changed
        sentences: list[list[str]] = piper.phonemize(voice, text, clusters)
        _ESPEAK.forget_voice()
    return sentences


def test_espeak_sentences_are_pipers_for_every_corpus_reply_and_voice() -> None:
    texts = [*corpus_texts(), _FRENCH_WORD, "No end", "a, b; c: d."]
    for voice in ("en-us", "en-gb-x-rp", "fr"):
        for text in texts:
            assert espeak_sentences(voice, text) == _piper_sentences(voice, text), (voice, text)


def test_vowel_clusters_merge_as_pipers_do() -> None:
    clusters = {("a", "ɪ"), ("o", "ʊ"), ("ə", "ʊ"), ("a", "ɪ", "ə")}
    text = "I owe you five fine fires; go home."
    assert espeak_sentences("en-us", text, clusters) == _piper_sentences("en-us", text, clusters)
    merged = [p for sentence in espeak_sentences("en-us", text, clusters) for p in sentence]
    assert any(len(p) > 1 for p in merged)


def test_the_espeak_voice_is_set_only_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # espeak-ng leaks a little at every voice change: a server must not change it per request.
    from piper import espeakbridge  # noqa: PLC0415

    calls: list[str] = []
    real = espeakbridge.set_voice

    def counting(voice: str) -> None:
        calls.append(voice)
        real(voice)

    monkeypatch.setattr(espeakbridge, "set_voice", counting)
    for _ in range(3):
        espeak_sentences("en-us", "Hello there.")
    espeak_sentences("fr", "Bonjour.")
    espeak_sentences("fr", "Bonsoir.")
    espeak_sentences("en-us", "Hello there.")
    assert calls in (["fr", "en-us"], ["en-us", "fr", "en-us"])
