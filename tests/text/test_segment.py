"""Tests for voxflow.text.segment: golden sentence splits, clause rules and confirmation."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.segment_texts import GOLDEN, parse_golden_line, tricky_text
from voxflow.text.segment import (
    LOOKBEHIND,
    Boundary,
    BoundaryKind,
    BoundaryScanner,
    _early_clause,
    find_boundaries,
)

S = BoundaryKind.SENTENCE
C = BoundaryKind.CLAUSE
W = BoundaryKind.WORD


def sentences(text: str, final: bool = True) -> list[str]:
    """The text split at SENTENCE boundaries, for readable assertions."""
    cuts = [b.pos for b in find_boundaries(text, final) if b.kind is S]
    out, start = [], 0
    for cut in cuts:
        out.append(text[start:cut].strip())
        start = cut
    return out


def kinds(text: str, final: bool = False) -> dict[int, BoundaryKind]:
    return {b.pos: b.kind for b in find_boundaries(text, final)}


def test_golden_file_is_large_enough() -> None:
    assert len(GOLDEN) >= 45


@pytest.mark.parametrize("line", GOLDEN)
def test_golden_sentence_splits(line: str) -> None:
    text, expected = parse_golden_line(line)
    found = [b.pos for b in find_boundaries(text, final=True) if b.kind is S]
    assert found == expected, sentences(text)


def test_golden_parser_handles_markers_and_newlines() -> None:
    assert parse_golden_line("A b. | C d.") == ("A b. C d.", [4, 9])
    assert parse_golden_line("x\\n\\n|y") == ("x\n\ny", [1, 4])


def test_sentences_helper_on_a_paragraph() -> None:
    text = "Dr. Smith paid $3.50 at 3 p.m. today. Then he left! Did he? Yes."
    assert sentences(text) == [
        "Dr. Smith paid $3.50 at 3 p.m. today.",
        "Then he left!",
        "Did he?",
        "Yes.",
    ]


# --- word and clause boundaries -------------------------------------------------------------


def test_word_boundaries_sit_at_the_end_of_each_word() -> None:
    assert find_boundaries("one  two three", final=False) == [Boundary(3, W), Boundary(8, W)]


def test_leading_whitespace_is_not_a_boundary() -> None:
    assert find_boundaries("   hello world", final=False) == [Boundary(8, W)]


@pytest.mark.parametrize(
    ("text", "pos"),
    [
        ("Hello, world", 6),
        ("first; second", 6),
        ("Note: this", 5),
        ('"Hi," she said', 5),
        ("wait — what", 6),
        ("wait -- what", 7),
        ("wait - what", 6),
        ("wait \N{EN DASH} what", 6),
        ("wait— what", 5),
        ("wait-- what", 6),
    ],
)
def test_clause_boundaries(text: str, pos: int) -> None:
    assert kinds(text)[pos] is C


@pytest.mark.parametrize(
    "text",
    ["1,000 people came", "at 3:30 today", "a well-known fact", "pre- and post-war", "x,y z"],
)
def test_no_clause_inside_tokens_or_at_hyphens(text: str) -> None:
    assert all(kind is W for kind in kinds(text).values())


def test_dash_before_spaced_dash_is_a_plain_word_boundary() -> None:
    assert kinds("wait — what") == {4: W, 6: C}


def test_bullet_dash_at_line_start_is_not_a_clause() -> None:
    assert kinds("- item one") == {1: W, 6: W}
    assert kinds("Shopping\n- milk") == {8: C, 10: W}


def test_single_newline_is_at_least_a_clause() -> None:
    assert kinds("roses are red\nviolets") == {5: W, 9: W, 13: C}


def test_blank_line_is_always_a_sentence() -> None:
    assert kinds("word\n\nmore")[4] is S
    assert kinds("Mr.\n \nSmith")[3] is S
    assert kinds("etc.\n\nand")[4] is S


def test_single_newline_keeps_a_stronger_sentence_kind() -> None:
    assert kinds("Done.\nNext")[5] is S


# --- sentence rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Dr. Smith",
        "Mrs. Jones",
        "St. Louis",
        "Prof. X",
        "e.g. Python",
        "i.e. This",
        "vs. Them",
        "No. 5",
        "Fig. 2",
        "Jan. 5",
        "approx. 3",
        "J. Smith",
        "etc. and",
        "p.m. today",
        "wait... what",
        "Inc. before",
    ],
)
def test_not_a_sentence_end(text: str) -> None:
    assert S not in kinds(text).values()


@pytest.mark.parametrize(
    "text",
    [
        "etc. The",
        "Inc. The",
        "U.S. The",
        "p.m. Then",
        "No. Then",
        "Jan. The",
        "done. 5",
        "done. (Aside",
        "done. “Quote",
        "done. $5",
        "done. • item",
        "Wait... What",
        "Wait… What",
        "sure? yes",
        "great! and",
        "what?! No",
        'said "Stop." Then',
        "(aside.) Then",
    ],
)
def test_sentence_end(text: str) -> None:
    assert S in kinds(text).values()


def test_closing_quote_moves_the_boundary_after_it() -> None:
    assert kinds('He said "Stop." Then')[15] is S
    assert kinds("He said “Stop.” Then")[15] is S


def test_dialogue_tag_after_quoted_exclamation_is_not_a_split() -> None:
    assert kinds('"Run!" he said')[6] is W
    assert kinds('"Run!" He said')[6] is S


def test_lowercase_after_period_never_splits() -> None:
    assert kinds("The end. and more")[8] is W


def test_period_before_other_punctuation_is_not_a_sentence() -> None:
    assert kinds("end. , more")[4] is W


def test_initial_before_a_digit_is_a_sentence_end() -> None:
    # The initial rule only applies before a letter; "B. 5" reads as a sentence then a number.
    assert kinds("plan B. 5 more")[7] is S


@pytest.mark.parametrize(
    ("text", "pos", "kind"),
    [
        ("1. Buy milk", 2, W),
        ("Steps: 1. Open", 9, W),
        ("Done. 2. Next", 8, W),
        ('Done." 2. Next', 9, W),
        ("line\n3. Next", 7, W),
        ("The answer is 42. Next", 17, S),
        ("Total 1234. Next", 11, S),
    ],
)
def test_list_markers(text: str, pos: int, kind: BoundaryKind) -> None:
    assert kinds(text)[pos] is kind


# --- confirmation and final -------------------------------------------------------------------


def test_boundary_is_held_until_the_next_character_arrives() -> None:
    assert find_boundaries("Hello there.", final=False) == [Boundary(5, W)]
    assert find_boundaries("Hello there.   ", final=False) == [Boundary(5, W)]
    assert find_boundaries("Hello there. H", final=False) == [Boundary(5, W), Boundary(12, S)]


def test_next_character_can_refute_a_candidate() -> None:
    assert find_boundaries("etc. a", final=False) == [Boundary(4, W)]
    assert find_boundaries("etc. A", final=False) == [Boundary(4, S)]


def test_final_adds_end_of_text_sentence() -> None:
    assert find_boundaries("Hello there", final=True) == [Boundary(5, W), Boundary(11, S)]


def test_final_decides_trailing_candidate_without_lookahead() -> None:
    assert find_boundaries("Wait, Dr.  \n", final=True) == [Boundary(5, C), Boundary(9, S)]


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_empty_or_blank_text_has_no_boundaries(text: str) -> None:
    assert find_boundaries(text, final=True) == []
    assert find_boundaries(text, final=False) == []


def test_lookbehind_is_bounded() -> None:
    # The numeral is more than LOOKBEHIND characters after the sentence end, so the list-marker
    # context check stops at the window edge and treats it as a line start.
    text = "It ended." + " " * LOOKBEHIND + "7. Next"
    pos = len(text) - len(" Next")
    assert kinds(text)[pos] is W
    assert kinds("It ended. 7. Next")[12] is W


# --- prefix stability and the incremental scanner ---------------------------------------------


@settings(max_examples=300, deadline=None)
@given(text=tricky_text(), data=st.data())
def test_prefix_stability(text: str, data: st.DataObject) -> None:
    full = find_boundaries(text, final=False)
    cut = data.draw(st.integers(0, len(text)))
    prefix = text[:cut]
    settled = len(prefix.rstrip())
    expected = [b for b in full if b.pos < settled]
    if settled < len(prefix) and _early_clause(prefix, settled):
        # A clause mark and a space: decided before the next word, and the same in the whole.
        early = Boundary(settled, BoundaryKind.CLAUSE)
        assert early in full
        expected.append(early)
    assert find_boundaries(prefix, final=False) == expected


@settings(max_examples=300, deadline=None)
@given(text=tricky_text())
def test_boundaries_are_ordered_and_sit_before_whitespace(text: str) -> None:
    found = find_boundaries(text, final=True)
    positions = [b.pos for b in found]
    assert positions == sorted(set(positions))
    for boundary in found:
        assert 0 < boundary.pos <= len(text)
        assert not text[boundary.pos - 1].isspace()
        assert boundary.pos == len(text) or text[boundary.pos].isspace()


@settings(max_examples=300, deadline=None)
@given(text=tricky_text(), data=st.data())
def test_scanner_matches_find_boundaries_for_any_split(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    scanner = BoundaryScanner()
    found: list[Boundary] = []
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        found.extend(scanner.feed(text[start:end]))
    assert found == find_boundaries(text, final=False)
    assert scanner.settled == len(text.rstrip())
    assert scanner.end == len(text)


def test_scanner_trims_released_text_but_keeps_lookbehind() -> None:
    scanner = BoundaryScanner()
    text = "word " * 1000 + "Dr. Smith"
    found: list[Boundary] = []
    for char in text:
        found.extend(scanner.feed(char))
        scanner.release(scanner.settled)
    assert found == find_boundaries(text, final=False)
    with pytest.raises(ValueError, match="not retained"):
        scanner.text(0, 5)
    assert scanner.text(scanner.end - 9, scanner.end) == "Dr. Smith"


def test_scanner_find_content_skips_whitespace() -> None:
    scanner = BoundaryScanner()
    scanner.feed("ab   ")
    assert scanner.find_content(2) is None
    scanner.feed("  c")
    assert scanner.find_content(2) == 7
    assert scanner.text(0, 2) == "ab"


def test_a_clause_mark_and_a_space_are_decided_without_the_next_word() -> None:
    scanner = BoundaryScanner()

    def clauses(piece: str) -> list[Boundary]:
        return [b for b in scanner.feed(piece) if b.kind is not BoundaryKind.WORD]

    assert clauses("Well, the orchestra") == [Boundary(5, BoundaryKind.CLAUSE)]
    assert clauses(" played;") == []
    # The space after ";" alone completes the clause boundary ...
    assert scanner.feed(" ") == [Boundary(27, BoundaryKind.CLAUSE)]
    # ... which is not reported again when the next word confirms it.
    assert scanner.feed("then") == []
    # A period still waits: "Dr. Smith" and "end. The" differ only in what follows.
    assert scanner.feed(" Dr. ") == [Boundary(32, BoundaryKind.WORD)]
    assert scanner.feed("Smith") == [Boundary(36, BoundaryKind.WORD)]
    assert find_boundaries("It ended, \n\nThen", final=False) == [
        Boundary(2, BoundaryKind.WORD),
        Boundary(9, BoundaryKind.CLAUSE),  # decided at the space: a later blank line is ignored
    ]
    assert find_boundaries("It ended,\n\nThen", final=False)[-1].kind is BoundaryKind.SENTENCE
    assert find_boundaries("Yes, ", final=True) == [Boundary(4, BoundaryKind.SENTENCE)]
