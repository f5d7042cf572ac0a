"""Tests for voxflow.text.segment_ja: Japanese sentence, clause and word boundaries, and that they
are the same however the text is split."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxflow.text.segment import Boundary, BoundaryKind, BoundaryScanner, find_boundaries
from voxflow.text.segment_ja import JAPANESE_BOUNDARIES

S = BoundaryKind.SENTENCE
C = BoundaryKind.CLAUSE
W = BoundaryKind.WORD

REPLY = (
    "かしこまりました。明日の午後3時からの会議を、来週の火曜日に変更いたします！"
    "「はい。」と田中さんも言っていました。本当ですか？ご予約は3,000円で、"
    "14:30に東京駅へお越しください…ほかにお手伝いできることはありますか？"
)


def find(text: str, final: bool = False) -> list[Boundary]:
    return find_boundaries(text, final, JAPANESE_BOUNDARIES)


def pieces(text: str, kinds: frozenset[BoundaryKind] = frozenset(BoundaryKind)) -> list[str]:
    """The text cut at the boundaries of the given kinds (end of text included)."""
    out, start = [], 0
    for boundary in find(text, final=True):
        if boundary.kind in kinds:
            out.append(text[start : boundary.pos].strip())
            start = boundary.pos
    return out


def sentences(text: str) -> list[str]:
    return pieces(text, frozenset({S}))


# --- sentences and clauses --------------------------------------------------------------------


def test_sentences_end_at_japanese_and_ascii_terminators_without_spaces() -> None:
    assert sentences("はい。分かりました！本当？ええ!?そう…では") == [
        "はい。",
        "分かりました！",
        "本当？",
        "ええ!?",
        "そう…",
        "では",
    ]


def test_closing_brackets_after_a_terminator_belong_to_its_sentence() -> None:
    assert sentences("彼は「行きます。」次の日（本当に！）出かけた。") == [
        "彼は「行きます。」",
        "次の日（本当に！）",
        "出かけた。",
    ]
    assert sentences("“Yes.”次") == ["“Yes.”", "次"]


def test_a_quotation_before_the_quotative_to_is_not_a_sentence_end() -> None:
    assert sentences("「はい。」と言った。「えっ！？」って思った。") == [
        "「はい。」と言った。",
        "「えっ！？」って思った。",
    ]
    assert {b.pos: b.kind for b in find("「はい。」と言った")}[5] is W


@pytest.mark.parametrize(
    ("text", "pos"),
    [
        ("はい、そうです", 3),
        ("例えば，これ", 4),
        ("注意：危険", 3),
        ("はい;そう", 3),
        ("はい, そう", 3),
    ],
)
def test_clause_marks(text: str, pos: int) -> None:
    assert {b.pos: b.kind for b in find(text)}[pos] is C


@pytest.mark.parametrize(
    "text",
    ["1,000円", "１，０００円", "3:30に", "３：３０に", "1.5倍", "１．５倍", "example.com", "a,b"],
)
def test_no_boundary_inside_numbers_or_ascii_tokens(text: str) -> None:
    for boundary in find(text + "です"):
        assert boundary.pos >= len(text) or boundary.kind is W
        assert not text[boundary.pos - 1 : boundary.pos].isdigit()
    assert [b.pos for b in find(text + "です") if b.kind > W] == []
    # An ASCII mark is a clause mark before a space or Japanese text, not before ASCII text.
    assert find("a, b")[0] == Boundary(2, C)


def test_whitespace_and_newlines() -> None:
    found = {b.pos: b.kind for b in find("今日は。 明日は Google Maps で\n確認\n\n終わり")}
    assert found == {4: S, 8: W, 15: W, 20: W, 22: C, 25: S}
    # Before a lowercase Latin word a period is no sentence end, as in English.
    assert {b.pos: b.kind for b in find("etc. and")}[4] is W


def test_a_list_number_is_not_a_sentence() -> None:
    assert sentences("手順:\n1. 準備する\n2. 実行する") == ["手順:\n1. 準備する\n2. 実行する"]
    assert [b.kind for b in find("1.準備")] == [W]


# --- word boundaries ------------------------------------------------------------------------


def test_word_boundaries_after_hiragana_before_another_script() -> None:
    assert pieces("明日の会議を確認しました") == ["明日の", "会議を", "確認しました"]
    assert pieces("Pythonのコードを3回書いて「完成」") == [
        "Pythonの",
        "コードを",
        "3回書いて",
        "「完成」",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "コンピューター",  # a katakana run, long vowel mark included
        "ジョン・スミス",
        "東京都新宿区",  # a kanji run
        "12,345.67",  # a number
        "ありがとうございます",  # a hiragana run: nothing tells its words apart
        "すごーい",  # a long vowel mark after hiragana continues the word
        "お手伝い",  # an honorific prefix is no ending
        "ご連絡",
    ],
)
def test_no_word_boundary_inside_runs(text: str) -> None:
    assert find(text + "。次") == [Boundary(len(text) + 1, S)]


# --- invariants -----------------------------------------------------------------------------


def test_a_boundary_waits_for_the_character_that_confirms_it() -> None:
    assert find("はい。") == []
    assert find("はい。」") == []
    assert find("はい。」と") == [Boundary(4, W)]
    assert find("3,") == []  # "3,000" or "3, " ?
    assert find("はい、") == []  # a closing bracket could still follow
    assert find("はい。", final=True) == [Boundary(3, S)]


def test_prefix_stability_and_chunking_independence_on_every_two_way_split() -> None:
    whole = find(REPLY)
    assert [b.kind for b in whole].count(S) == 5  # the last one waits for what follows
    for cut in range(len(REPLY) + 1):
        prefix = REPLY[:cut]
        settled = len(prefix.rstrip())
        assert find(prefix) == [b for b in whole if b.pos < settled]
        scanner = BoundaryScanner(JAPANESE_BOUNDARIES)
        assert scanner.feed(REPLY[:cut]) + scanner.feed(REPLY[cut:]) == whole


def test_scanner_matches_find_boundaries_on_random_splits() -> None:
    text = REPLY * 3  # long enough for the scanner to trim what it no longer reads
    expected = find(text)
    rng = random.Random(41)
    for _ in range(50):
        scanner = BoundaryScanner(JAPANESE_BOUNDARIES)
        found: list[Boundary] = []
        at = 0
        while at < len(text):
            size = rng.randint(1, 4)
            found.extend(scanner.feed(text[at : at + size]))
            scanner.release(scanner.settled)
            at += size
        assert found == expected
        assert scanner.sentence_at_end() == Boundary(len(text), S)


_ALPHABET = st.sampled_from(
    [
        *"あいうをはのでにがっゃーおご",
        *"会議東京日本人分",
        *"カタコンピュータ・",
        *"0123456789０１",
        *"。、！？!?…,.:：，」』）「（”“ ",
        "\n",
        *"abAZ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(_ALPHABET, max_size=60), data=st.data())
def test_boundaries_are_the_same_for_any_split(text: str, data: st.DataObject) -> None:
    whole = find(text)
    positions = [b.pos for b in find(text, final=True)]
    assert positions == sorted(set(positions))
    assert all(not text[pos - 1].isspace() for pos in positions)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=10)))
    scanner = BoundaryScanner(JAPANESE_BOUNDARIES)
    found: list[Boundary] = []
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        found.extend(scanner.feed(text[start:end]))
    assert found == whole
    assert scanner.settled == len(text.rstrip())


def test_sentence_at_end_is_what_a_japanese_word_would_confirm() -> None:
    def at_end(text: str) -> Boundary | None:
        scanner = BoundaryScanner(JAPANESE_BOUNDARIES)
        scanner.feed(text)
        return scanner.sentence_at_end()

    assert at_end("はい。") == Boundary(3, S)
    assert at_end("「はい！」") == Boundary(5, S)
    assert at_end("はい、") is None
    assert at_end("確認します") is None
    assert at_end("1.") is None  # a list number
