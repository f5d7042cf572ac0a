"""Tests for voxflow.session.pieces: spoken-length splitting and switch points."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voxflow.session.pieces import split_spoken, spoken_offset, switch_points
from voxflow.text.language import TextLanguage
from voxflow.text.normalize.normalizer import NormalizationMode, Normalized, Normalizer


@given(
    words=st.lists(st.sampled_from(["nine", "a", "b,", "word.", "x" * 40, "dollars"]), max_size=60),
    limit=st.integers(20, 120),
)
def test_split_spoken_covers_the_text_in_pieces_under_the_limit(
    words: list[str], limit: int
) -> None:
    text = " ".join(words)
    ranges = split_spoken(text, limit)
    # Nothing is lost or repeated: the pieces hold every non-space character, in order.
    assert "".join(text[a:b] for a, b in ranges).replace(" ", "") == text.replace(" ", "")
    for (_, b), (c, _) in itertools.pairwise(ranges):
        assert b <= c and text[b:c].strip() == ""
    for a, b in ranges:
        assert 0 < b - a <= limit
        assert text[a:b] == text[a:b].strip()


def test_split_spoken_prefers_a_cut_after_punctuation() -> None:
    text = "one two three four five, six seven eight nine ten eleven"
    assert split_spoken(text, 40) == [(0, 24), (25, len(text))]
    # A mark in the first half would make a short piece: the last space wins instead.
    text = "one, two three four five six seven eight nine ten eleven"
    assert split_spoken(text, 40)[0] == (0, 40)


def test_split_spoken_cuts_japanese_after_its_punctuation() -> None:
    # No spaces: the cut goes after "、" or "。" (the latest in the second half), not mid-word.
    text = "明日の会議では、新しい計画について説明します。資料は事前にお送りしました。"
    assert split_spoken(text, 30) == [(0, 23), (23, len(text))]
    assert split_spoken(text, 20) == [(0, 8), (8, 23), (23, len(text))]
    assert split_spoken("東京" * 20, 30) == [(0, 30), (30, 40)]  # nothing to cut at


def test_split_spoken_leaves_short_text_whole_and_skips_blank_text() -> None:
    assert split_spoken("  Hello there.  ", 300) == [(2, 14)]
    assert split_spoken("   ", 10) == []


def test_the_first_piece_can_be_shorter_when_the_text_is_cut_anyway() -> None:
    text = "word " * 100
    ranges = split_spoken(text, 300, first_chars=40)
    assert ranges[0][1] - ranges[0][0] <= 40
    assert all(b - a <= 300 for a, b in ranges)
    # Text that fits in one piece is left whole.
    assert split_spoken("word " * 20, 300, first_chars=40) == [(0, 99)]


def test_a_long_run_of_digits_is_spoken_in_bounded_pieces() -> None:
    spoken = Normalizer().normalize("9" * 250, NormalizationMode.AUTO).text
    ranges = split_spoken(spoken, 300)
    assert len(ranges) == 5
    assert all(spoken[a:b].split() == ["nine"] * len(spoken[a:b].split()) for a, b in ranges)


def test_spoken_offset_points_at_the_spoken_form_of_a_word() -> None:
    normalized = Normalizer().normalize("It costs $3.50 today.", NormalizationMode.AUTO)
    at = spoken_offset(normalized, "It costs $3.50 today.".index("$"))
    assert normalized.text[at:].startswith("three dollars")
    at = spoken_offset(normalized, "It costs $3.50 today.".index("today"))
    assert normalized.text[at:].startswith("today")
    assert spoken_offset(normalized, 0) == 0


@pytest.mark.parametrize(
    ("lead", "whole"),
    [
        ("Your total comes", "Your total comes to $45.99 with tax."),
        ("It costs $3.50 for", "It costs $3.50 for two of them."),
        ("Call 555-123-4567 between", "Call 555-123-4567 between nine and five."),
    ],
)
def test_switch_points_pair_the_same_written_words(lead: str, whole: str) -> None:
    normalizer = Normalizer()
    lead_n = normalizer.normalize(lead, NormalizationMode.AUTO)
    whole_n = normalizer.normalize(whole, NormalizationMode.AUTO)
    points = switch_points(lead_n, whole_n)
    assert points[0] == (0, 0)
    assert points[-1][0] == len(lead_n.text)
    # The end point is where the whole's rendering of the word after the lead begins.
    after = whole[len(lead) :].split(maxsplit=1)[0]
    assert whole_n.text[points[-1][1] :].startswith(
        normalizer.normalize(after, NormalizationMode.AUTO).text.split()[0]
    )
    for in_lead, in_whole in points[1:-1]:
        assert lead_n.text[:in_lead].rstrip() == whole_n.text[:in_whole].rstrip()
    assert len(points) >= len(lead.split())


def test_switch_points_need_the_whole_to_start_with_the_lead() -> None:
    with pytest.raises(ValueError, match="start with"):
        switch_points(Normalized.identity("one two"), Normalized.identity("three four"))


def test_japanese_switch_points_fall_at_each_phrase_of_the_lead() -> None:
    """Japanese has no spaces: without its phrase ends, a takeover could only come after the
    lead's last word, which the lead alone says with a phrase-final fall."""
    normalizer = Normalizer(language=TextLanguage.JAPANESE)
    lead = normalizer.normalize("ご注文はホットコーヒーの", NormalizationMode.AUTO)
    whole = normalizer.normalize(
        "ご注文はホットコーヒーのMサイズが2つで、合計1,280円です。", NormalizationMode.AUTO
    )
    points = switch_points(lead, whole, TextLanguage.JAPANESE)
    assert [whole.text[w:][:4] for _, w in points] == ["ご注文は", "ホットコ", "Mサイズ"]
    assert points[1] == (4, 4) and points[-1] == (len(lead.text), len(lead.text))
    assert switch_points(lead, whole) == (points[0], points[-1])  # read as English: no spaces
