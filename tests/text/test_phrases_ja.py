"""Tests for voxflow.text.phrases on Japanese: the mora-based spoken cost and phrase endings."""

import pytest

from voxflow.text.language import TextLanguage
from voxflow.text.phrases import (
    MORA_COST,
    ends_phrase,
    spoken_cost,
    starts_phrase,
    written_chars,
)

JA = TextLanguage.JAPANESE


@pytest.mark.parametrize(
    ("text", "morae"),
    [
        ("はい", 2),
        ("きょう", 2),  # ょ merges with き
        ("ちょっと", 3),  # っ is a mora of its own
        ("コーヒー", 4),  # so is ー
        ("ティー", 2),
        ("東京", 4),  # a kanji is about two morae
        ("3", 2),  # さん
        ("5", 1),  # ご
        ("50%", 8),  # ごじゅう... パーセント
    ],
)
def test_japanese_cost_counts_morae(text: str, morae: int) -> None:
    assert spoken_cost(text, JA) == morae * MORA_COST


def test_punctuation_costs_what_it_costs_in_english() -> None:
    assert spoken_cost("はい、", JA) == 2 * MORA_COST + 1
    assert spoken_cost("、。 ", JA) == 3


def test_english_cost_is_unchanged() -> None:
    assert spoken_cost("はい") == 2  # English counts characters, whatever they are
    assert spoken_cost("$5") == spoken_cost("$5", TextLanguage.ENGLISH) == 13


def test_the_same_cost_is_about_the_same_speech_in_both_languages() -> None:
    # A sentence of about 2.5 s in each language: ~13 English characters a second and ~7.5
    # Japanese morae a second.
    english = "I can move your appointment to Tuesday."
    japanese = "ご予約を火曜日に変更できます。"  # ごよやくをかようびにへんこうできます: 18 morae
    assert 0.75 <= spoken_cost(japanese, JA) / spoken_cost(english) <= 1.25


@pytest.mark.parametrize(
    "text",
    ["明日の会議では", "私は", "東京駅から", "三時に", "確認したので", "調べたけど", "雨ですが"],
)
def test_bunsetsu_closed_by_a_particle_ends_a_phrase(text: str) -> None:
    assert ends_phrase(text, JA)


@pytest.mark.parametrize("text", ["明日の", "会議を", "確認して", "ありがとうは", "東京", ""])
def test_bunsetsu_bound_to_the_next_word_does_not_end_a_phrase(text: str) -> None:
    assert not ends_phrase(text, JA)


def test_english_phrases_are_never_told_by_their_end() -> None:
    assert ends_phrase("私は", JA) and not ends_phrase("私は")


def test_japanese_words_never_start_a_phrase() -> None:
    assert starts_phrase("and") and not starts_phrase("and", JA)


def test_lengths_in_english_characters_are_a_third_as_many_japanese_ones() -> None:
    assert written_chars(250, TextLanguage.ENGLISH) == 250
    assert written_chars(250, TextLanguage.JAPANESE) == 83
    assert written_chars(1, TextLanguage.JAPANESE) == 1  # never zero
