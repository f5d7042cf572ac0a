"""``voxflow.text.ssml``: golden cases for each element, the written text's offsets, clear errors
for bad markup, and the invariant: any split of a document into chunks reads as the whole."""

from __future__ import annotations

import html
import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxflow.text.ssml import (
    MAX_MARKUP_CHARS,
    Boundary,
    Break,
    Say,
    SsmlError,
    SsmlItem,
    SsmlReader,
    Style,
    Text,
    read_ssml,
)


def _written(document: str) -> str:
    """The written text, read independently of the reader: markup out, entities read."""
    without = re.sub(r"<!--.*?-->|<\?.*?\?>|<[^>]*>", "", document, flags=re.DOTALL)
    return html.unescape(without)


def _check_offsets(document: str, items: list[SsmlItem]) -> None:
    written = _written(document)
    covered = ""
    for item in items:
        if isinstance(item, Text | Say):
            text = item.text if isinstance(item, Text) else item.written
            assert written[item.start : item.start + len(text)] == text, (item, written)
            assert item.start == len(covered)
            covered += text
    assert covered == written


# -- golden cases --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("Hello there.", [Text("Hello there.", 0)]),
        ("<speak>Hi <emphasis>you</emphasis>.</speak>", [Text("Hi you.", 0)]),
        (
            'Wait<break time="1.5s"/> now<break strength="weak"/><break/>.',
            [
                Text("Wait", 0),
                Break(1500.0),
                Text(" now", 4),
                Break(250.0),
                Break(400.0),
                Text(".", 8),
            ],
        ),
        ('<break time="250ms" strength="x-strong"/>', [Break(250.0)]),
        (
            'Visit <sub alias="World Wide Web">WWW</sub>!',
            [Text("Visit ", 0), Say("WWW", 6, alias="World Wide Web"), Text("!", 9)],
        ),
        (
            '<phoneme alphabet="x-cmu" ph="T AH0 M EY1 T OW2">tomato</phoneme>',
            [Say("tomato", 0, phonemes="T AH0 M EY1 T OW2", alphabet="x-cmu")],
        ),
        (
            '<phoneme ph="ŋwɪən">Nguyen</phoneme>',
            [Say("Nguyen", 0, phonemes="ŋwɪən", alphabet="ipa")],
        ),
        (
            'Code <say-as interpret-as="characters">AB12</say-as>, on '
            '<say-as interpret-as="date" format="dmy">1/2/2027</say-as>',
            [
                Text("Code ", 0),
                Say("AB12", 5, interpret_as="characters"),
                Text(", on ", 9),
                Say("1/2/2027", 14, interpret_as="date", format="dmy"),
            ],
        ),
        (
            '<prosody rate="slow">a<prosody rate="50%" volume="loud">b</prosody>c</prosody>d',
            [
                Style(0.75, 1.0),
                Text("a", 0),
                Style(0.375, 1.6),
                Text("b", 1),
                Style(0.75, 1.0),
                Text("c", 2),
                Style(1.0, 1.0),
                Text("d", 3),
            ],
        ),
        (
            '<prosody rate="+20%" volume="-6dB">x</prosody>',
            [Style(1.2, pytest.approx(0.501, abs=1e-3)), Text("x", 0), Style(1.0, 1.0)],
        ),  # type: ignore[arg-type]
        ('<prosody rate="medium">same</prosody>', [Text("same", 0)]),
        (
            "<p><s>One.</s><s>Two</s></p>",
            [Text("One.", 0), Boundary("s"), Text("Two", 4), Boundary("s"), Boundary("p")],
        ),
        ("Tom &amp; Jerry &lt;3 &#233;&#xE9;", [Text("Tom & Jerry <3 éé", 0)]),
        ('<?xml version="1.0"?><!-- a > b --><voice name="x">Hi</voice>', [Text("Hi", 0)]),
        ('<sub alias="R &amp; D">R&amp;D</sub>', [Say("R&D", 0, alias="R & D")]),
    ],
)
def test_each_element_reads_as_documented(document: str, expected: list[SsmlItem]) -> None:
    items = read_ssml(document)
    assert items == expected
    _check_offsets(document, items)


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ("Hello <break", "unfinished markup"),
        ("<speak>Hello", "<speak> is never closed"),
        ("<s>a</p>", "</p> where </s> was due"),
        ("a</s>", "</s> where no closing tag was due"),
        ("Tom & Jerry", "not an entity"),
        ("&bogus;", "unknown entity"),
        ("<break time='forever'/>", "break time"),
        ('<break time="11s"/>', "at most 10000 ms"),
        ('<break strength="huge"/>', "break strength"),
        ("<break>x</break>", "must be empty"),
        ("<sub>x</sub>", "needs an alias"),
        ('<sub alias="y"> </sub>', "no text to speak"),
        ('<sub alias="y"/>', "no text to speak"),
        ("<phoneme>x</phoneme>", "needs ph"),
        ('<phoneme ph="x" alphabet="klingon">x</phoneme>', "phoneme alphabet"),
        ('<say-as interpret-as="poem">x</say-as>', "interpret-as"),
        ('<say-as interpret-as="digits"><break/>1</say-as>', "only text may stand inside"),
        ('<prosody rate="ludicrous">x</prosody>', "prosody rate"),
        ('<prosody rate="1000%">x</prosody>', "between"),
        ('<prosody volume="-">x</prosody>', "prosody volume"),
        ("<a b=c>x</a>", "malformed tag"),
        ('<a b="1" b="2">x</a>', "given twice"),
        ("<a <b>", "malformed tag"),
        ("<" + "a" * MAX_MARKUP_CHARS, "markup too long"),
        ('<say-as interpret-as="digits">' + "1" * 1001 + "</say-as>", "holds too much"),
    ],
)
def test_bad_markup_is_refused_clearly(document: str, reason: str) -> None:
    with pytest.raises(SsmlError, match=re.escape(reason)):
        read_ssml(document)


def test_an_error_says_where_in_the_document() -> None:
    with pytest.raises(SsmlError) as raised:
        read_ssml('Hi <break time="x"/>')
    assert raised.value.offset == 3 and "at character 3" in str(raised.value)


def test_a_protocol_sets_its_own_break_limit() -> None:
    assert read_ssml('<break time="3s"/>', max_break_ms=3000) == [Break(3000.0)]
    with pytest.raises(SsmlError, match="at most 3000 ms"):
        read_ssml('<break time="3.1s"/>', max_break_ms=3000)


def test_a_tag_split_across_tokens_is_held_until_complete() -> None:
    reader = SsmlReader()
    assert reader.feed("Hello <bre") == [Text("Hello ", 0)]
    assert reader.feed('ak time="2') == []
    assert reader.feed('00ms"/> wor') == [Break(200.0), Text(" wor", 6)]
    assert reader.feed('ld <sub alias="Doctor">D') == [Text("ld ", 10)]
    assert reader.feed("r.</sub> &am") == [Say("Dr.", 13, alias="Doctor"), Text(" ", 16)]
    assert reader.feed("p;") == [Text("&", 17)]
    assert reader.end() == []


# -- any split -----------------------------------------------------------------------------------

words = st.text(alphabet="abcXYZ 12.,!?é", min_size=1, max_size=8)
escaped = st.sampled_from(["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#233;", "&#x20AC;"])


def _wrap(name: str, attributes: str = "") -> st.SearchStrategy[str]:
    # Something to speak: a letter or digit first, then anything.
    spoken = st.tuples(st.sampled_from("aZ7"), st.lists(st.one_of(words, escaped), max_size=3))
    return spoken.map(lambda t: f"<{name}{attributes}>{t[0]}{''.join(t[1])}</{name}>")


leaves = st.one_of(
    words,
    escaped,
    st.sampled_from(['<break time="300ms"/>', "<break/>", '<break strength="strong" />']),
    _wrap("sub", ' alias="an alias"'),
    _wrap("phoneme", " alphabet='ipa' ph='həˈloʊ'"),
    _wrap("say-as", ' interpret-as="characters"'),
    st.just("<!-- a comment > with a bracket -->"),
)
documents = st.recursive(
    st.lists(leaves, max_size=4).map("".join),
    lambda inner: st.one_of(
        st.tuples(
            st.sampled_from(["p", "s", "speak", "emphasis", "voice", "prosody"]),
            st.sampled_from(["", ' rate="fast"', ' volume="soft" rate="80%"']),
            st.lists(inner, max_size=3).map("".join),
        ).map(lambda t: f"<{t[0]}{t[1] if t[0] == 'prosody' else ''}>{t[2]}</{t[0]}>"),
        st.lists(inner, min_size=2, max_size=3).map("".join),
    ),
    max_leaves=12,
)
# Documents with one thing wrong: a character dropped or one of the markup's own put in.
broken = st.tuples(documents, st.integers(0, 200), st.sampled_from(["", "<", "&", ">", "</s>"]))


def _read_in_chunks(document: str, cuts: list[int]) -> list[SsmlItem] | tuple[str, int]:
    reader = SsmlReader()
    items: list[SsmlItem] = []
    bounds = [0, *sorted({min(cut, len(document)) for cut in cuts}), len(document)]
    try:
        for start, end in itertools.pairwise(bounds):
            items += reader.feed(document[start:end])
        items += reader.end()
    except SsmlError as error:
        return (error.reason, error.offset)
    joined: list[SsmlItem] = []
    for item in items:
        if isinstance(item, Text) and joined and isinstance(joined[-1], Text):
            joined[-1] = Text(joined[-1].text + item.text, joined[-1].start)
        else:
            joined.append(item)
    return joined


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(document=documents, cuts=st.lists(st.integers(0, 400), max_size=12))
def test_any_split_reads_as_the_whole_document(document: str, cuts: list[int]) -> None:
    whole = _read_in_chunks(document, [])
    assert isinstance(whole, list), whole  # every generated document is well formed
    _check_offsets(document, whole)
    assert _read_in_chunks(document, cuts) == whole
    assert _read_in_chunks(document, list(range(len(document)))) == whole  # one by one


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(case=broken, cuts=st.lists(st.integers(0, 400), max_size=12))
def test_any_split_of_a_broken_document_fails_alike(
    case: tuple[str, int, str], cuts: list[int]
) -> None:
    document, at, inserted = case
    at = min(at, len(document))
    document = document[:at] + inserted + document[at + (0 if inserted else 1) :]
    assert _read_in_chunks(document, cuts) == _read_in_chunks(document, [])
