"""The Japanese parts of the benchmarks, without audio: the kana readings and their character
error rate (``voxflow_bench.kana``), the LLM tokens of Japanese text (``voxflow_bench.tokens``)
and the Japanese reply corpus (``replies-ja.tsv``), as the calls bench plans its turns.

pyopenjtalk comes with ``make kokoro-voices``, which ``make unit`` runs: its absence is a
failure here, not a skip (as the Kokoro engine's tests treat the voices)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from voxflow_bench import kana
from voxflow_bench.calls.plan import CallPattern, CallScript
from voxflow_bench.corpus import load_corpus
from voxflow_bench.edit_distance import edit_distance
from voxflow_bench.kana import (
    JapaneseUnavailableError,
    character_error_rate,
    kana_errors,
    kana_reading,
)
from voxflow_bench.tokens import japanese_tokens, llm_tokens

JAPANESE = load_corpus(bundled="replies-ja.tsv")
_JAPANESE_CHAR = re.compile(r"[\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3005-\u3007\u4e00-\u9fff]")


# -- kana readings and CER ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "heard"),
    [
        ("お支払いは3,000円です。", "おしはらいはさんぜんえんです"),  # kanji, digits, kana
        ("3,000円", "三千円"),
        ("3000円", "サンゼンエン"),
        ("¥1,500", "1500円"),  # the yen sign is said after the amount
        ("14:30に伺います", "14時30分に伺います"),  # a clock time
        ("9:00", "九時"),
        ("2026/12/3", "2026年12月3日"),  # a date
        ("11月29日", "十一月二十九日"),
        ("午後3時", "ごごさんじ"),
        ("３名様", "3名様"),  # full-width digits
        ("090-1234-5678", "09012345678"),  # a phone number, digit by digit either way
        ("東京", "トウキョウ"),  # ー against the vowel it lengthens
        ("映画", "えいが"),  # エーガ against エイガ
        ("お父さん", "オトウサン"),
        ("はい、かしこまりました。", "ハイ かしこまりました"),  # punctuation and spaces
        ("いかがでしょうか？", "いかがでしょうか"),
        ("Mサイズ", "エムサイズ"),  # a Latin letter as said
        ("を", "お"),  # kana said alike
    ],
)
def test_spellings_of_one_reading_compare_equal(written: str, heard: str) -> None:
    assert kana_reading(written) == kana_reading(heard) != ""
    assert kana_errors(written, heard) == (0, len(kana_reading(written)))
    assert character_error_rate(written, heard) == 0


def test_the_reading_is_katakana_without_length_or_punctuation() -> None:
    assert kana_reading("お支払いは3,000円です。") == "オシハライワサンゼンエンデス"
    assert kana_reading("東京") == kana_reading("とうきょう") == "トキョ"
    assert kana_reading("はい、はい") == "ハイハイ"  # a vowel that is not the one before stays
    assert kana_reading("言う") == "イウ"


@pytest.mark.parametrize(
    ("reference", "hypothesis", "errors", "size"),
    [
        ("さんぜんえん", "よんせんえん", 2, 6),  # two substitutions (サ ヨ, ゼ セ)
        ("東京に行きます", "京都に行きます", 2, 7),  # トキョ against キョト
        ("はい", "", 2, 2),  # all deleted
        ("はい", "はいはい", 2, 2),  # inserted
        ("ご返品を確認いたしました", "5ペンピンを確認いたしました", 1, 16),  # ヘ heard as ペ
    ],
)
def test_a_real_error_counts(reference: str, hypothesis: str, errors: int, size: int) -> None:
    assert kana_errors(reference, hypothesis) == (errors, size)
    assert character_error_rate(reference, hypothesis) == pytest.approx(errors / size)


def test_empty_texts() -> None:
    assert kana_reading("") == kana_reading("   ") == kana_reading("。、？") == ""
    assert kana_errors("", "") == (0, 0)
    assert kana_errors("。", "はい") == (2, 0)
    assert kana_errors("はい", "。") == (2, 2)
    with pytest.raises(ValueError, match="no kana"):
        character_error_rate("", "はい")


def test_edit_distance_counts_each_edit() -> None:
    assert edit_distance("", "") == 0
    assert edit_distance("abc", "abc") == 0
    assert edit_distance("abc", "") == 3
    assert edit_distance("", "ab") == 2
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance(["a", "b"], ["a", "c", "b"]) == 1


@pytest.fixture
def no_pyopenjtalk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pyopenjtalk as if not installed (the reader is cached: cleared before and after)."""

    def missing(name: str) -> object:
        raise ModuleNotFoundError(f"No module named {name!r}")

    kana._openjtalk.cache_clear()
    monkeypatch.setattr(kana.importlib, "import_module", missing)
    yield
    kana._openjtalk.cache_clear()


@pytest.mark.usefixtures("no_pyopenjtalk")
def test_without_pyopenjtalk_the_error_names_the_make_target() -> None:
    with pytest.raises(JapaneseUnavailableError, match=r"pyopenjtalk.*make kokoro-voices"):
        kana_reading("はい")


# -- LLM tokens --------------------------------------------------------------------------------


def test_japanese_tokens_add_up_to_the_text_at_one_to_three_characters() -> None:
    sizes = []
    for reply in JAPANESE:
        tokens = llm_tokens(reply.text)
        assert "".join(tokens) == reply.text
        assert all(tokens)
        for token in tokens:
            japanese = _JAPANESE_CHAR.findall(token)
            if japanese:
                assert len(japanese) == len(token.strip()) <= 3, token  # never mixed with more
                sizes.append(len(japanese))
    assert 1.7 <= sum(sizes) / len(sizes) <= 2.6
    assert sizes.count(1) < len(sizes) / 2  # mostly pieces, not characters


def test_japanese_tokens_split_at_script_changes() -> None:
    assert llm_tokens("かしこまりました。") == ["かしこ", "まりま", "した", "。"]
    assert llm_tokens("ご注文の商品は") == ["ご", "注文", "の", "商品", "は"]
    assert llm_tokens("チーズケーキ") == ["チーズ", "ケーキ"]
    assert llm_tokens("LINEで3,000円!") == ["LINE", "で", "3", ",", "000", "円", "!"]
    assert japanese_tokens(" かしこ") == [" かしこ"]  # a leading space goes with the first
    assert japanese_tokens("abc") == ["abc"]
    # English is cut as before.
    assert llm_tokens("I can reschedule it.")[:4] == ["I", " can", " resc", "hedu"]


# -- the corpus --------------------------------------------------------------------------------


def test_the_japanese_corpus_looks_like_agent_replies() -> None:
    assert 30 <= len(JAPANESE) <= 40
    assert len({r.name for r in JAPANESE}) == len(JAPANESE)
    categories = {r.category for r in JAPANESE}
    assert categories >= {"customer support", "bookings", "deliveries", "banking", "smart home"}
    text = "\n".join(r.text for r in JAPANESE)
    for written in ("3,000円", "¥1,500", "11月29日", "2026/12/3", "14:30", "午後3時", "090-"):
        assert written in text, written
    assert re.search(r"\d+名", text) and re.search(r"\d+回", text)  # counters
    assert any(r.text.startswith(("はい、", "かしこまりました。")) for r in JAPANESE)
    assert sum(r.text.endswith("か？") for r in JAPANESE) >= 5  # polite questions
    # A long clause without a comma, and enough replies without digits to measure alone.
    assert any(len(r.text) >= 50 and "、" not in r.text for r in JAPANESE)
    assert sum(not any(c.isdigit() for c in r.text) for r in JAPANESE) >= 12
    assert all(kana_reading(r.text) for r in JAPANESE)


def test_the_tuning_corpus_is_openers_and_shares_no_reply_with_the_held_out_one() -> None:
    tuning = load_corpus(bundled="openers-ja.tsv")
    assert len({r.name for r in tuning}) == len(tuning) >= 30
    # Most open with a short interjection before a clause mark: what a lead is cut from.
    openers = [r for r in tuning if 0 < r.text.find("、") <= 8 and "。" not in r.text[:8]]
    assert len(openers) >= len(tuning) // 2
    assert not {r.text for r in tuning} & {r.text for r in JAPANESE}
    assert all(kana_reading(r.text) for r in tuning)


def test_the_calls_bench_plans_japanese_turns() -> None:
    """``voxflow bench --calls --corpus replies-ja.tsv``: the turns stream the replies' Japanese
    tokens, and an LLM pause may follow a Japanese mark (、 。 or the full-width question mark)."""
    pattern = CallPattern(llm_pause_share=1.0, seed=3)
    script = CallScript(0, pattern, JAPANESE)
    paused = []
    for _ in range(40):
        turn = script.next_turn()
        assert "".join(token.text for token in turn.tokens) == turn.text
        if turn.pause_after >= 0:
            paused.append(turn.tokens[turn.pause_after].text)
    assert any(text.endswith(("。", "、", "？")) for text in paused), paused
    # Never a time's colon (14:30): a mark inside a word is no place for a pause.
    assert not any(text.endswith(":") for text in paused), paused
