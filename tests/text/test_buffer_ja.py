"""Tests for the TextBuffer on Japanese text: leads, sentences, never-run-dry cuts, and the same
segments however an LLM's tokens split the reply."""

import random

import pytest

from tests.support.buffer_runs import split_at
from voxflow.text.buffer import TextBuffer, segment_text
from voxflow.text.chunking import (
    DEFAULT_LEAD_COST,
    ChunkingConfig,
    Segment,
    SegmentEnd,
    every_sentence,
)
from voxflow.text.language import TextLanguage
from voxflow.text.phrases import spoken_cost
from voxflow.text.segment import BoundaryKind, find_boundaries
from voxflow.text.segment_ja import JAPANESE_BOUNDARIES

JA = TextLanguage.JAPANESE
W, C, S, F = SegmentEnd.WORD, SegmentEnd.CLAUSE, SegmentEnd.SENTENCE, SegmentEnd.FLUSH

MEETING = (
    "明日の会議では新しいプロジェクトの進め方について説明します。"
    "資料は事前にお送りしましたので、ご確認ください。"
    "何かご質問があれば、いつでもお知らせください。"
)
BOOKING = (
    "ご予約の変更を承りました。新しい日時は来週火曜日の午後3時で、場所は本社の第2会議室です。"
    "何かご不明な点がございましたら、お気軽にお問い合わせください。"
)

# (reply, chunking, [(text, boundary, lead)]): a short lead, then whole sentences (the adaptive
# schedule's 60-character minimum is 20 Japanese characters: written_chars).
GOLDEN = [
    (
        MEETING,
        ChunkingConfig(),
        [
            ("明日の会議では", W, True),
            ("新しいプロジェクトの進め方について説明します。", S, False),
            ("資料は事前にお送りしましたので、ご確認ください。", S, False),
            ("何かご質問があれば、いつでもお知らせください。", F, False),
        ],
    ),
    (
        BOOKING,
        every_sentence(ChunkingConfig()),
        [
            ("ご予約の変更を", W, True),
            ("承りました。", S, False),
            ("新しい日時は来週火曜日の午後3時で、場所は本社の第2会議室です。", S, False),
            ("何かご不明な点がございましたら、お気軽にお問い合わせください。", F, False),
        ],
    ),
    (
        "申し訳ございませんが、その日は満席となっております。別の日はいかがでしょうか？",
        every_sentence(ChunkingConfig()),
        [
            ("申し訳ございませんが、", C, True),
            ("その日は満席となっております。", S, False),
            ("別の日はいかがでしょうか？", F, False),
        ],
    ),
]


def run(config: ChunkingConfig, pieces: list[str]) -> list[Segment]:
    buffer = TextBuffer(config, language=JA)
    out: list[Segment] = []
    for piece in pieces:
        out.extend(buffer.feed(piece, now=0.0))
    return out + buffer.flush()


def llm_tokens(text: str, seed: int) -> list[str]:
    """``text`` in pieces of one to three characters, as an LLM streams Japanese."""
    rng = random.Random(seed)
    pieces, at = [], 0
    while at < len(text):
        size = rng.randint(1, 3)
        pieces.append(text[at : at + size])
        at += size
    return pieces


def check(stream: str, segments: list[Segment], config: ChunkingConfig) -> None:
    """Segments cover the stream in order, within the cap, at true Japanese boundaries."""
    kinds = {b.pos: b.kind for b in find_boundaries(stream, False, JAPANESE_BOUNDARIES)}
    end = 0
    for number, segment in enumerate(segments):
        assert segment.text == stream[segment.start : segment.end] == segment.text.strip()
        assert stream[end : segment.start].strip() == ""
        assert segment.end - segment.start <= config.max_chars
        assert segment.index == number
        if segment.boundary not in (SegmentEnd.FLUSH, SegmentEnd.CUT):
            assert kinds[segment.end] == BoundaryKind(segment.boundary)
        end = segment.end
    assert stream[end:].strip() == ""


@pytest.mark.parametrize(("reply", "config", "expected"), GOLDEN)
def test_golden_streamed_replies(
    reply: str, config: ChunkingConfig, expected: list[tuple[str, SegmentEnd, bool]]
) -> None:
    whole = run(config, [reply])
    assert [(s.text, s.boundary, s.lead) for s in whole] == expected
    check(reply, whole, config)
    low, high = DEFAULT_LEAD_COST
    assert low <= spoken_cost(whole[0].text, JA) <= high
    for seed in range(20):
        assert run(config, llm_tokens(reply, seed)) == whole
    for cut in range(len(reply) + 1):
        assert run(config, split_at(reply, [cut])) == whole


def test_a_bunsetsu_closed_by_a_particle_in_the_window_is_cut_at_once() -> None:
    buffer = TextBuffer(ChunkingConfig(), language=JA)
    assert buffer.feed("明日の会議で", now=0.0) == []
    assert buffer.feed("は", now=0.0) == []  # "で" or "では": the next character decides
    [lead] = buffer.feed("新", now=0.0)
    assert (lead.text, lead.boundary, lead.lead) == ("明日の会議では", W, True)
    low, high = DEFAULT_LEAD_COST
    assert low <= spoken_cost(lead.text, JA) <= high


def test_without_a_phrase_ending_the_lead_is_the_last_word_boundary_in_the_window() -> None:
    # Boundaries cost 10 (明日の), 32 (午後三時からの), 48: 32 is the last inside (18, 32).
    [lead, *_] = run(ChunkingConfig(), ["明日の午後三時からの打ち合わせを延期します。"])
    assert (lead.text, lead.boundary, lead.lead) == ("明日の午後三時からの", W, True)
    assert spoken_cost(lead.text, JA) == 32


def test_a_clause_in_the_window_ends_the_first_segment_in_auto_mode() -> None:
    config = ChunkingConfig(auto_mode=True)
    [first, second] = run(config, ["申し訳ございませんが、その日は満席となっております。"])
    assert (first.text, first.boundary, first.lead) == ("申し訳ございませんが、", C, True)
    assert second.text == "その日は満席となっております。"


def test_hurry_cuts_a_lead_from_the_japanese_that_has_arrived() -> None:
    buffer = TextBuffer(ChunkingConfig(), language=JA)
    assert buffer.feed("かしこまりました。", now=0.0) == []
    [opener] = buffer.poll(1.0)  # the look-ahead: a sentence end at the end of the text
    assert (opener.text, opener.boundary, opener.lead) == ("かしこまりました。", S, False)
    assert buffer.feed("ご予約の変更を承りま", now=1.0) == []
    assert buffer.can_hurry
    # The text costs 30, inside the window (18, 32): a later boundary may still lie inside it.
    assert buffer.hurry() == []
    # Now it costs 34: the latest boundary inside the window is the lead, cut at once.
    [lead] = buffer.feed("した", now=1.1)
    assert (lead.text, lead.boundary, lead.lead, lead.index) == ("ご予約の変更を", W, True, 1)
    [takeover] = buffer.feed("。新しい日時は", now=1.2)
    assert (takeover.text, takeover.boundary) == ("承りました。", S)
    # Without the hurry the same text waits for the schedule's minimum.
    assert run(ChunkingConfig(), ["かしこまりました。ご予約の変更を承りました。"])[1:] == [
        Segment("ご予約の変更を承りました。", 9, 22, F, 1, False)
    ]


def test_cut_tells_a_japanese_clause_end() -> None:
    buffer = TextBuffer(ChunkingConfig(), language=JA)
    buffer.feed("はい、", now=0.0)
    [segment] = buffer.cut()
    assert segment.boundary is C


def test_segment_text_takes_the_language() -> None:
    text = "ご予約の変更を承りました。ありがとうございます。"
    japanese = segment_text(text, ChunkingConfig(), JA)
    assert japanese == run(ChunkingConfig(), [text])
    assert japanese[0].text == "ご予約の変更を"
    # Read as English the text has no boundary but its end: one segment.
    assert [s.text for s in segment_text(text, ChunkingConfig())] == [text]


LONG = (
    "お客様のご注文いただいた商品につきましては現在倉庫での在庫確認と出荷準備を進めておりまして"
    "通常であれば三日から五日ほどでお届けできる見込みですが年末の繁忙期と重なっているため"
    "配送業者の状況によっては一週間程度お時間をいただく場合もございますので"
    "何卒ご理解のほどよろしくお願い申し上げます。"
)


def test_a_long_sentence_without_marks_is_cut_at_phrases_within_a_third_of_max_chars() -> None:
    """A Japanese character carries about three English ones' phonemes: 250 characters of
    Japanese would be past what Kokoro reads in one utterance (510 ids), 83 are not."""
    segments = segment_text(LONG, ChunkingConfig(), JA)
    assert "".join(s.text for s in segments) == LONG
    assert len(segments) >= 3
    assert all(len(s.text) <= 250 // 3 for s in segments)
    assert all(s.boundary is not SegmentEnd.CUT for s in segments)
    assert [s.boundary for s in segments[:-1]] == [SegmentEnd.WORD] * (len(segments) - 1)
