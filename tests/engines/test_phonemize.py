from __future__ import annotations

from voxflow.engines.phonemize import Phonemizer, align_words, text_words


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
