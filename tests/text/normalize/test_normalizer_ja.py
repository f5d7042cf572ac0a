"""The Japanese normalizer: golden spoken forms, their readings by the Japanese phonemizer
(pyopenjtalk, when installed), and the map back to the written text."""

import warnings
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxflow.text.language import TextLanguage
from voxflow.text.lexicon import Lexicon, LexiconEntry
from voxflow.text.normalize.normalizer import NormalizationMode, Normalized, Normalizer

NORMALIZER = Normalizer().for_language(TextLanguage.JAPANESE)

DATE_READING = "ニセンニジューロクネンジューイチガツニジュークニチ"
PHONE = "ゼロサン、イチニーサンヨン、ゴーロクナナハチ"
MOBILE = "ゼロキューゼロ、イチニーサンヨン、ゴーロクナナハチ"

# written -> spoken form -> its katakana reading (what a Japanese speaker says).
GOLDEN = [
    # plain numbers, thousands separators, decimals, full-width digits
    ("3,000", "三千", "サンゼン"),
    ("12,500", "一万二千五百", "イチマンニセンゴヒャク"),
    ("1.5", "一点五", "イッテンゴ"),
    ("３，０００", "三千", "サンゼン"),
    ("１２３", "百二十三", "ヒャクニジューサン"),
    ("0", "ゼロ", "ゼロ"),
    ("0.5", "〇点五", "レーテンゴ"),
    ("99", "キュージューキュー", "キュージューキュー"),  # 九十九 alone is つくも
    ("800", "ハッピャク", "ハッピャク"),  # 八百 alone is やお
    ("007", "ゼロゼロナナ", "ゼロゼロナナ"),
    ("-5度", "マイナス五度", "マイナスゴド"),
    # prices
    ("3,000円", "三千円", "サンゼンエン"),
    ("¥3,000", "三千円", "サンゼンエン"),
    ("￥1,500", "千五百円", "センゴヒャクエン"),
    ("800円", "八百円", "ハッピャクエン"),
    ("$20", "二十ドル", "ニジュードル"),
    ("$3.50", "三ドル五十セント", "サンドルゴジュッセント"),
    # dates
    ("2026年11月29日", "二千二十六年十一月二十九日", DATE_READING),
    ("11月29日", "十一月二十九日", "ジューイチガツニジュークニチ"),
    ("2026/11/29", "二千二十六年十一月二十九日", DATE_READING),
    ("2026-11-01", "二千二十六年十一月一日", "ニセンニジューロクネンジューイチガツツイタチ"),
    ("4月20日", "四月二十日", "シガツハツカ"),
    # times
    ("14:30", "十四時三十分", "ジューヨジサンジュップン"),
    ("9:05", "九時五ふん", "クジゴフン"),
    ("14:00", "十四時", "ジューヨジ"),
    ("0:15", "零時十五ふん", "レージジューゴフン"),
    ("午後3時", "午後三時", "ゴゴサンジ"),
    ("3時半", "三時半", "サンジハン"),
    ("14:00〜15:30", "十四時から十五時三十分", "ジューヨジカラジューゴジサンジュップン"),
    # percentages, phone numbers, counters
    ("50%", "五十パーセント", "ゴジュッパーセント"),
    ("５０％", "五十パーセント", "ゴジュッパーセント"),
    ("03-1234-5678", PHONE, PHONE),
    ("090-1234-5678", MOBILE, MOBILE),
    ("3人", "三人", "サンニン"),
    ("2回", "二回", "ニカイ"),
    ("10個", "十個", "ジュッコ"),
    ("99人", "九十九人", "キュージューキューニン"),
    ("3〜5人", "三から五人", "サンカラゴニン"),
    ("5分", "五ふん", "ゴフン"),  # 五分 alone is ごぶ
    ("会議は5分で終わります", "会議は五ふんで終わります", "カイギワゴフンデオワリマス"),
    ("10分待って", "じゅっぷん待って", "ジュップンマッテ"),  # 十分 is also じゅうぶん
    ("30分", "三十分", "サンジュップン"),
    ("5分の1", "五分の一", "ゴブンノイチ"),  # a fraction
    ("第3回", "第三回", "ダイサンカイ"),
]  # fmt: skip


@pytest.fixture(scope="module")
def reading() -> Callable[[str], str]:
    pyopenjtalk = pytest.importorskip("pyopenjtalk")

    def read(text: str) -> str:
        with warnings.catch_warnings():
            # pyopenjtalk-plus calls SudachiPy's deprecated Dictionary.create() on first use.
            warnings.filterwarnings("ignore", r"Dictionary\.create\(\)", DeprecationWarning)
            spoken: str = pyopenjtalk.g2p(text, kana=True)
        return spoken

    return read


def assert_valid_spans(result: Normalized) -> None:
    """Spans cover the spoken form in order, stay inside the written text, never move back,
    and copied spans are copies."""
    cursor = last_start = last_end = 0
    for span in result.spans:
        assert span.out_start == cursor < span.out_end
        assert last_start <= span.src_start <= span.src_end <= len(result.source)
        assert span.src_end >= last_end
        if span.copied:
            copied = result.text[span.out_start : span.out_end]
            assert copied == result.source[span.src_start : span.src_end]
        cursor, last_start, last_end = span.out_end, span.src_start, span.src_end
    assert cursor == len(result.text)


@pytest.mark.parametrize(("written", "spoken", "kana"), GOLDEN)
def test_golden_spoken_forms(written: str, spoken: str, kana: str) -> None:
    result = NORMALIZER.normalize(written)
    assert result.text == spoken
    assert_valid_spans(result)


@pytest.mark.parametrize(("written", "spoken", "kana"), GOLDEN)
def test_golden_readings(
    written: str, spoken: str, kana: str, reading: Callable[[str], str]
) -> None:
    del written
    assert reading(spoken) == kana


def test_a_reply_maps_back_to_what_was_written() -> None:
    written = "明日の14:30に、¥3,000を03-1234-5678へ。"
    result = NORMALIZER.normalize(written)
    assert (
        result.text
        == "明日の十四時三十分に、三千円をゼロサン、イチニーサンヨン、ゴーロクナナハチへ。"
    )
    assert_valid_spans(result)

    def source(spoken: str) -> str:
        start = result.text.index(spoken)
        begin, end = result.to_source(start, start + len(spoken))
        return written[begin:end]

    assert source("明日の") == "明日の"  # copied text maps character for character
    assert source("十四時三十分") == "14:30"
    assert source("時") == ":"
    assert source("三千円") == "¥3,000"
    assert source("イチニーサンヨン") == "1234"
    assert source("に、") == "に、"


def test_full_width_text_is_copied_as_written() -> None:
    result = NORMALIZER.normalize("ＡＢＣは３人")
    assert result.text == "ＡＢＣは三人"
    assert result.to_source(4, 5) == (4, 5)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(
        st.sampled_from([*"0123456789０１,.:：-/%％¥￥$〜年月日時分人円はのを会議 、。AZ"]),
        max_size=40,
    )
)
def test_no_digit_is_left_and_spans_stay_valid(text: str) -> None:
    result = NORMALIZER.normalize(text)
    assert not any(char in "0123456789０１" for char in result.text)
    assert_valid_spans(result)


def test_for_language_keeps_the_lexicon_and_one_normalizer_per_language() -> None:
    lexicon = Lexicon([LexiconEntry("API", respelling="ay pee eye")])
    english = Normalizer(lexicon)
    japanese = english.for_language(TextLanguage.JAPANESE)
    assert japanese is english.for_language(TextLanguage.JAPANESE)
    assert english.for_language(TextLanguage.ENGLISH) is english
    assert (japanese.language, japanese.lexicon) == (TextLanguage.JAPANESE, lexicon)
    assert english.language is TextLanguage.ENGLISH
    merged = japanese.with_lexicon(Lexicon([LexiconEntry("SDK", respelling="es dee kay")]))
    assert merged.language is TextLanguage.JAPANESE
    # An English entry does not break Japanese text: the numbers around it are still read.
    assert japanese.normalize("APIを3回").text == "APIを三回"
    assert japanese.normalize("API").text == "ay pee eye"


def test_english_is_unchanged_and_off_is_off() -> None:
    assert Normalizer().normalize("I paid $3.50 at 3:30.").text == (
        "I paid three dollars and fifty cents at three thirty."
    )
    assert NORMALIZER.normalize("3人", NormalizationMode.OFF).text == "3人"
