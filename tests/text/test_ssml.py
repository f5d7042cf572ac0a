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
    CARTESIA_TAGS,
    MAX_MARKUP_CHARS,
    SSML,
    Boundary,
    Break,
    Say,
    SsmlDialect,
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
    assert read_ssml('<break time="3s"/>', SsmlDialect(max_break_ms=3000)) == [Break(3000.0)]
    with pytest.raises(SsmlError, match="at most 3000 ms"):
        read_ssml('<break time="3.1s"/>', SsmlDialect(max_break_ms=3000))


def test_a_tag_split_across_tokens_is_held_until_complete() -> None:
    reader = SsmlReader()
    assert reader.feed("Hello <bre") == [Text("Hello ", 0)]
    assert reader.feed('ak time="2') == []
    assert reader.feed('00ms"/> wor') == [Break(200.0), Text(" wor", 6)]
    assert reader.feed('ld <sub alias="Doctor">D') == [Text("ld ", 10)]
    assert reader.feed("r.</sub> &am") == [Say("Dr.", 13, alias="Doctor"), Text(" ", 16)]
    assert reader.feed("p;") == [Text("&", 17)]
    assert reader.end() == []


def test_a_chunk_with_bad_markup_changes_nothing() -> None:
    reader = SsmlReader()
    assert reader.feed("<speak><prosody rate='slow'>One ") == [Style(0.75, 1.0), Text("One ", 0)]
    with pytest.raises(SsmlError, match="break time"):
        reader.feed("two <break time='x'/>")
    # "two " was not taken: the corrected chunk reads on from where the reader was.
    assert reader.feed("two <break time='1s'/>") == [Text("two ", 4), Break(1000.0)]
    assert reader.feed("</prosody></speak>") == [Style(1.0, 1.0)]
    assert reader.end() == []


# -- dialects ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("AT&T & x < 5 <3 a<b", [Text("AT&T & x < 5 <3 a<b", 0)]),
        ("Tom &amp; Jerry &bogus; &", [Text("Tom & Jerry &bogus; &", 0)]),
        (
            'Hello, my name is Sonic.<break time="1s"/>Nice to meet you.',
            [Text("Hello, my name is Sonic.", 0), Break(1000.0), Text("Nice to meet you.", 24)],
        ),
        (
            '<speed ratio="1.5"/>Fast <volume ratio="0.5"/>and soft <speed ratio="1"/>now',
            [
                Style(1.5, 1.0),
                Text("Fast ", 0),
                Style(1.5, 0.5),
                Text("and soft ", 5),
                Style(1.0, 0.5),
                Text("now", 14),
            ],
        ),
        (
            "Code <spell>ABC-123</spell>.",
            [Text("Code ", 0), Say("ABC-123", 5, interpret_as="characters"), Text(".", 12)],
        ),
        # Elements Cartesia does not have: their tags are dropped, however they nest.
        (
            '<emotion value="sad"/><speak>Hi <sub alias="x">y</sub>',
            [Text("Hi y", 0)],
        ),
        ("x <y and z", [Text("x <y and z", 0)]),  # never a tag: text at the end
    ],
)
def test_cartesia_tags_read_as_documented(document: str, expected: list[SsmlItem]) -> None:
    assert read_ssml(document, CARTESIA_TAGS) == expected


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ('<speed ratio="2"/>', "speed ratio '2': a number from 0.6 to 1.5"),
        ('<volume ratio="loud"/>', "volume ratio 'loud'"),
        ("<spell>abc", "<spell> is never closed"),
        ('<break time="11s"/>', "at most 10000 ms"),
    ],
)
def test_bad_cartesia_tags_are_refused_clearly(document: str, reason: str) -> None:
    with pytest.raises(SsmlError, match=re.escape(reason)):
        read_ssml(document, CARTESIA_TAGS)


def test_a_dialect_names_only_elements_the_reader_knows() -> None:
    with pytest.raises(ValueError, match="no such SSML elements: blink"):
        SsmlDialect(frozenset({"break", "blink"}))
    with pytest.raises(ValueError, match="max_break_ms"):
        SsmlDialect(max_break_ms=0)


def test_a_lenient_dialect_holds_a_bare_bracket_until_the_next_character_decides() -> None:
    reader = SsmlReader(CARTESIA_TAGS)
    assert reader.feed("x <") == [Text("x ", 0)]
    assert reader.feed(" 5 and <br") == [Text("< 5 and ", 2)]
    assert reader.feed('eak time="1s"/>') == [Break(1000.0)]
    assert reader.feed("AT&") == [Text("AT", 10)]
    assert reader.feed("T") == []  # "&T" could still become an entity ("&Tab;")
    assert reader.feed(" ") == [Text("&T ", 12)]
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


def _read_in_chunks(
    document: str, cuts: list[int], dialect: SsmlDialect = SSML
) -> list[SsmlItem] | tuple[str, int]:
    reader = SsmlReader(dialect)
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


cartesia_leaves = st.one_of(
    st.text(alphabet="abcXYZ 12.,!?é&<>;", min_size=1, max_size=8),
    st.sampled_from(['<break time="300ms"/>', '<speed ratio="1.2"/>', '<volume ratio="0.7" />']),
    st.sampled_from(["&amp;", "<emotion value='calm'/>", "</b>", "<3"]),
    st.tuples(st.sampled_from("aZ7"), st.text(alphabet="abc12-", max_size=6)).map(
        lambda t: f"<spell>{t[0]}{t[1]}</spell>"
    ),
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    document=st.lists(cartesia_leaves, max_size=10).map("".join),
    cuts=st.lists(st.integers(0, 200), max_size=12),
)
def test_any_split_of_cartesia_text_reads_as_the_whole(document: str, cuts: list[int]) -> None:
    whole = _read_in_chunks(document, [], CARTESIA_TAGS)
    assert _read_in_chunks(document, cuts, CARTESIA_TAGS) == whole
    assert _read_in_chunks(document, list(range(len(document))), CARTESIA_TAGS) == whole
