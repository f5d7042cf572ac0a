"""voxflow.text.boundaries: each language's rules, and the word starts they give."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from voxflow.text.boundaries import boundary_rules, word_starts
from voxflow.text.language import TextLanguage
from voxflow.text.segment import ENGLISH_BOUNDARIES
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
