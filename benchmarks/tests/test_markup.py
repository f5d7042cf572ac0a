"""``voxflow_bench.markup``: the tagged replies are valid SSML with the same written text, their
tokens keep the text's pace, and the dictionary cost is measured on real segments."""

from __future__ import annotations

from voxflow.text.ssml import written_text
from voxflow_bench.corpus import load_corpus
from voxflow_bench.markup import dictionary_cost, dictionary_lexicon, tagged, text_paced
from voxflow_bench.tokens import llm_tokens


def test_every_tagged_reply_is_ssml_that_writes_the_reply() -> None:
    replies = load_corpus()
    for reply in replies:
        document = tagged(reply.text)
        assert document.startswith("<speak>") and document.endswith("</speak>")
        assert written_text(document).split() == reply.text.split()
    assert sum("<sub" in tagged(r.text) for r in replies) > len(replies) / 2


def test_markup_tokens_go_out_with_the_next_text_token() -> None:
    tokens = llm_tokens('<speak>Hi <emphasis>there</emphasis>, you.<break time="1s"/></speak>')
    assert text_paced(tokens) == [
        "<speak>Hi",
        " <emphasis>there",
        "</emphasis>,",
        " you",
        ".<",
        'break time="1s"/></speak>',  # nothing written after it: the rest goes last
    ]


def test_the_dictionary_cost_compares_the_same_segments() -> None:
    assert len(dictionary_lexicon(100)) == 100
    cost = dictionary_cost(load_corpus()[:4], entries=100, passes=1)
    assert cost.segments >= 4 and cost.plain_ms > 0 and cost.with_dictionary_ms > 0
    assert "with 100 entries" in cost.render()
