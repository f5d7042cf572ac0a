"""Tests for voxflow.text.lexicon and its application by the normalizer."""

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from piper.voice import _PHONEME_BLOCK_PATTERN

from voxflow.text.lexicon import (
    Lexicon,
    LexiconEntry,
    TextPart,
    phoneme_block,
    split_phoneme_blocks,
)
from voxflow.text.lexicon_file import read_lexicon_file
from voxflow.text.normalize.normalizer import NormalizationMode, Normalizer

GOOD_FILE = """\
# server-wide pronunciations

voxflow\tvox flow
  Nguyen\t[[ wən ]]
SQL\tsequel
C++\tsee plus plus
"""


def test_entry_needs_exactly_one_pronunciation() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        LexiconEntry("word")
    with pytest.raises(ValueError, match="exactly one"):
        LexiconEntry("word", respelling="x", phonemes="y")
    with pytest.raises(ValueError, match="whitespace"):
        LexiconEntry("two words", respelling="x")
    with pytest.raises(ValueError, match="empty"):
        LexiconEntry("word", respelling="  ")
    with pytest.raises(ValueError, match=r"\[\["):
        LexiconEntry("word", phonemes="a]]b")


def test_entry_is_frozen_and_knows_its_spoken_form() -> None:
    entry = LexiconEntry("Nguyen", phonemes="wən")
    assert entry.spoken == "[[ wən ]]"
    assert LexiconEntry("voxflow", respelling=" vox flow ").spoken == "vox flow"
    with pytest.raises(FrozenInstanceError):
        entry.word = "x"  # type: ignore[misc]


def test_from_text_parses_entries_comments_and_blank_lines() -> None:
    lexicon = Lexicon.from_text(GOOD_FILE)
    assert len(lexicon) == 4
    assert lexicon.lookup("voxflow") == LexiconEntry("voxflow", respelling="vox flow")
    assert lexicon.lookup("nguyen") == LexiconEntry("Nguyen", phonemes="wən")
    assert lexicon.lookup("c++") == LexiconEntry("C++", respelling="see plus plus")
    assert lexicon.lookup("# server-wide pronunciations") is None


def test_a_file_is_read_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.tsv"
    path.write_text(GOOD_FILE, encoding="utf-8")
    assert read_lexicon_file(path).entries == Lexicon.from_text(GOOD_FILE).entries


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ok\tfine\nno tab here\n", r":2: expected 'word<TAB>respelling'"),
        ("# c\n\nword\t\n", r":3: both a word and a pronunciation"),
        ("\tvalue\n", r":1: both a word and a pronunciation"),
        ("word\t[[abc\n", r":1: phonemes of 'word' must be written"),
        ("word\t[[]]\n", r":1: .*empty pronunciation"),
        ("word\ta\tb\n", r":1: .*more than one"),
        ("a\tx\nb\ty\nA\tz\n", r":3: 'A' is already defined on line 1"),
        ("word\t[[a [[b]]\n", r":1: .*may not contain"),
    ],
)
def test_bad_lines_name_their_line_number(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Lexicon.from_text(text, source="custom.tsv")


def test_bad_file_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text("good\tfine\nbad\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.tsv:2:"):
        read_lexicon_file(path)


def test_lookup_is_case_insensitive_on_whole_words() -> None:
    lexicon = Lexicon([LexiconEntry("VoxFlow", respelling="vox flow")])
    assert lexicon.lookup("voxflow") is not None
    assert lexicon.lookup("VOXFLOW") is not None
    assert lexicon.lookup("voxflows") is None
    assert lexicon.lookup("vox") is None


def test_merged_lets_the_other_lexicon_win_and_leaves_both_unchanged() -> None:
    server = Lexicon([LexiconEntry("tomato", respelling="tomayto"), LexiconEntry("gif", "jif")])
    request = Lexicon([LexiconEntry("Tomato", respelling="tomahto")])
    merged = server.merged(request)
    entry = merged.lookup("tomato")
    assert entry is not None and entry.respelling == "tomahto"
    assert merged.lookup("gif") == LexiconEntry("gif", "jif")
    server_entry = server.lookup("tomato")
    assert server_entry is not None and server_entry.respelling == "tomayto"
    assert len(request) == 1
    assert len(merged) == 2


def test_later_entries_win_in_the_constructor() -> None:
    lexicon = Lexicon([LexiconEntry("a1", "first"), LexiconEntry("A1", "second")])
    assert len(lexicon) == 1
    entry = lexicon.lookup("a1")
    assert entry is not None and entry.respelling == "second"


# -- applied by the normalizer -----------------------------------------------------------------

LEXICON = Lexicon.from_text(GOOD_FILE)


def test_respelling_replaces_the_word_and_maps_back_to_it() -> None:
    result = Normalizer(LEXICON).normalize("Try VoxFlow today.")
    assert result.text == "Try vox flow today."
    start = result.text.index("vox")
    assert result.to_source(start, start + 3) == (4, 11)
    assert result.to_source(start + 4, start + 8) == (4, 11)
    assert result.to_source(result.text.index("today"), len(result.text) - 1) == (12, 17)


def test_phoneme_entry_becomes_a_piper_block() -> None:
    result = Normalizer(LEXICON).normalize("Ask Nguyen, please.")
    assert result.text == "Ask [[ wən ]], please."
    start = result.text.index("[[")
    assert result.to_source(start, start + len("[[ wən ]]")) == (4, 10)
    assert _PHONEME_BLOCK_PATTERN.split(result.text) == ["Ask ", "[[ wən ]]", ", please."]


def test_lexicon_overrides_other_rules() -> None:
    normalizer = Normalizer(LEXICON)
    assert normalizer.normalize("SQL and C++!").text == "sequel and see plus plus!"
    assert Normalizer().normalize("SQL and C++!").text == "SQL and C plus plus!"


def test_lexicon_matches_whole_words_only() -> None:
    normalizer = Normalizer(LEXICON)
    assert normalizer.normalize("voxflows myvoxflow").text == "voxflows myvoxflow"
    assert normalizer.normalize("voxflow-based").text == "vox flow-based"
    assert normalizer.normalize("voxflow's API").text == "vox flow's eigh P I"


def test_lexicon_is_not_applied_when_off() -> None:
    text = "voxflow costs $5"
    assert Normalizer(LEXICON).normalize(text, NormalizationMode.OFF).text == text


def test_with_lexicon_merges_per_request_entries() -> None:
    server = Normalizer(LEXICON)
    request = Lexicon([LexiconEntry("voxflow", respelling="vocks flo")])
    assert server.with_lexicon(request).normalize("voxflow SQL").text == "vocks flo sequel"
    assert server.with_lexicon(None) is server
    assert Normalizer().with_lexicon(request).normalize("voxflow").text == "vocks flo"
    assert server.normalize("voxflow").text == "vox flow"


def test_split_phoneme_blocks_covers_the_text() -> None:
    text = "Ask [[ wən ]], then [[a]]"
    parts = split_phoneme_blocks(text)
    assert parts == (
        TextPart("Ask ", 0, 4, False),
        TextPart("wən", 4, 13, True),
        TextPart(", then ", 13, 20, False),
        TextPart("a", 20, 25, True),
    )
    assert "".join(text[p.start : p.end] for p in parts) == text
    assert split_phoneme_blocks("plain") == (TextPart("plain", 0, 5, False),)
    assert split_phoneme_blocks("") == ()


def test_phoneme_block_matches_piper_syntax() -> None:
    block = phoneme_block(" həlˈoʊ ")
    assert block == "[[ həlˈoʊ ]]"
    assert _PHONEME_BLOCK_PATTERN.fullmatch(block)
