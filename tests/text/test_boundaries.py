"""voxflow.text.boundaries: each language's rules, and the word starts they give."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from voxflow.text.boundaries import boundary_rules, next_word_end, word_starts
from voxflow.text.language import TextLanguage
from voxflow.text.segment import ENGLISH_BOUNDARIES, find_boundaries
from voxflow.text.segment_ja import JAPANESE_BOUNDARIES


def test_each_language_has_its_rules() -> None:
    assert boundary_rules(TextLanguage.ENGLISH) is ENGLISH_BOUNDARIES
    assert boundary_rules(TextLanguage.JAPANESE) is JAPANESE_BOUNDARIES
    assert all(boundary_rules(language) is not None for language in TextLanguage)


@given(st.text(alphabet=" \n\tab.,!?'$1", max_size=40))
def test_english_words_start_after_each_whitespace_run_between_words(text: str) -> None:
    runs = re.finditer(r"\s+", text)
    expected = [m.end() for m in runs if m.start() > 0 and m.end() < len(text)]
    assert word_starts(text, TextLanguage.ENGLISH) == expected


def test_japanese_words_start_at_each_phrase_and_clause() -> None:
    text = "リビングの照明を消して、エアコンの温度を24度に設定しました。"
    starts = word_starts(text, TextLanguage.JAPANESE)
    words = [text[a:b] for a, b in zip([0, *starts], [*starts, len(text)], strict=True)]
    assert words == [
        "リビングの",
        "照明を",
        "消して、",
        "エアコンの",
        "温度を",
        "24度に",
        "設定しました。",
    ]


def test_no_japanese_word_starts_inside_a_run_of_one_script() -> None:
    text = "申し込み番号はABC123です。"
    starts = word_starts(text, TextLanguage.JAPANESE)
    assert [text[a:] for a in starts] == ["ABC123です。"]


def test_the_next_word_ends_at_the_first_boundary_the_text_confirms() -> None:
    japanese, english = TextLanguage.JAPANESE, TextLanguage.ENGLISH
    text = "はい、来週の月曜日に会議室を予約しました。"
    assert next_word_end(text, 3, japanese, 100) == text.index("月")  # 来週の
    assert next_word_end("Sure, I can", 5, english, 100) == 7  # " I", whitespace skipped
    # Not confirmed yet (the word may go on), or longer than the limit: none.
    assert next_word_end("Sure, I", 5, english, 100) is None
    assert next_word_end("はい、来週", 3, japanese, 100) is None
    assert next_word_end("Sure, I can", 5, english, 2) is None
    assert next_word_end("Sure,   ", 5, english, 100) is None


@given(st.text(alphabet=" ab,.", max_size=30), st.integers(0, 30), st.integers(1, 30))
def test_the_next_word_end_is_a_boundary_of_the_whole_text_after_a_word(
    text: str, start: int, limit: int
) -> None:
    end = next_word_end(text, start, TextLanguage.ENGLISH, limit)
    if end is None:
        return
    assert start < end <= start + limit and text[start:end].strip()
    boundaries = {b.pos for b in find_boundaries(text, final=False, rules=ENGLISH_BOUNDARIES)}
    assert end in boundaries
    # The first such boundary: none between the word's first character and its end.
    first = start + len(text[start:]) - len(text[start:].lstrip())
    assert not any(first < pos < end for pos in boundaries)
