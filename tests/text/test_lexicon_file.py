"""``voxflow.text.lexicon_file``: ``--lexicon`` reads the tab-separated format and PLS alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from voxflow.text.lexicon_file import read_lexicon_file

PLS = """<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"
         alphabet="ipa" xml:lang="en-US">
  <lexeme><grapheme>voxflow</grapheme><alias>vox flow</alias></lexeme>
  <lexeme><grapheme>Nguyen</grapheme><phoneme>wˈɪn</phoneme></lexeme>
</lexicon>
"""
TSV = "# the same two words\nvoxflow\tvox flow\nNguyen\t[[wˈɪn]]\n"


def test_a_pls_file_and_a_tab_separated_one_give_the_same_lexicon(tmp_path: Path) -> None:
    (tmp_path / "words.pls").write_text(PLS, encoding="utf-8")
    (tmp_path / "words.tsv").write_text(TSV, encoding="utf-8")
    pls = read_lexicon_file(tmp_path / "words.pls")
    tsv = read_lexicon_file(tmp_path / "words.tsv")
    assert pls.entries == tsv.entries
    assert pls.lookup("VOXFLOW") is not None and pls.lookup("tomato") is None


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ("<lexicon><lexeme><grapheme>x</grapheme>", "words.txt"),
        ("voxflow vox flow\n", "words.txt:1"),
    ],
)
def test_a_malformed_file_is_named_in_the_error(
    tmp_path: Path, content: str, complaint: str
) -> None:
    (tmp_path / "words.txt").write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=complaint):
        read_lexicon_file(tmp_path / "words.txt")
