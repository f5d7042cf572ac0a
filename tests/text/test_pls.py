from __future__ import annotations

import pytest

from voxflow.text.pls import PronunciationRule, TooManyRules, lexicon_of, parse_pls, to_pls

HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
NS = 'xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"'


def lexicon(body: str, alphabet: str = "ipa") -> str:
    return (
        f'{HEAD}<lexicon version="1.0" {NS} alphabet="{alphabet}" xml:lang="en-US">{body}</lexicon>'
    )


def test_aliases_phonemes_and_several_graphemes() -> None:
    rules = parse_pls(
        lexicon(
            "<lexeme><grapheme>tomato</grapheme><grapheme>tomatoes</grapheme>"
            "<phoneme>təmˈɑːtoʊ</phoneme></lexeme>"
            "<lexeme><grapheme>UN</grapheme><alias>United Nations</alias></lexeme>"
        ).encode()
    )
    assert rules == (
        PronunciationRule("tomato", phoneme="təmˈɑːtoʊ"),
        PronunciationRule("tomatoes", phoneme="təmˈɑːtoʊ"),
        PronunciationRule("UN", alias="United Nations"),
    )
    words = lexicon_of(rules)
    entry = words.lookup("un")
    assert entry is not None and entry.spoken == "United Nations"
    entry = words.lookup("Tomato")
    assert entry is not None and entry.spoken == "[[ təmˈɑːtoʊ ]]"


def test_cmu_lexicon_becomes_ipa_and_a_phoneme_may_name_its_alphabet() -> None:
    rules = parse_pls(
        lexicon(
            "<lexeme><grapheme>Nguyen</grapheme><phoneme>W IH1 N</phoneme></lexeme>"
            '<lexeme><grapheme>Apple</grapheme><phoneme alphabet="ipa">ˈæpəl</phoneme></lexeme>',
            alphabet="x-cmu",
        )
    )
    assert [rule.alphabet for rule in rules] == ["cmu-arpabet", "ipa"]
    assert [entry.phonemes for entry in lexicon_of(rules).entries] == ["wˈɪn", "ˈæpəl"]


def test_preferred_pronunciation_and_first_lexeme_win() -> None:
    rules = parse_pls(
        lexicon(
            "<lexeme><grapheme>read</grapheme><alias>reed</alias>"
            '<alias prefer="true">red</alias></lexeme>'
            "<lexeme><grapheme>READ</grapheme><alias>rayed</alias></lexeme>"
        )
    )
    assert rules == (PronunciationRule("read", alias="red"),)


def test_round_trip_through_to_pls() -> None:
    rules = (
        PronunciationRule("voxflow", alias="vox flow"),
        PronunciationRule("tomato", phoneme="T AH0 M EY1 T OW2", alphabet="cmu-arpabet"),
        PronunciationRule("gif", phoneme="dʒɪf"),
    )
    assert parse_pls(to_pls(rules)) == rules


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("<lexicon><lexeme>", "well-formed"),
        ('<?xml version="1.0"?><!DOCTYPE lexicon [<!ENTITY x "y">]><lexicon/>', "DOCTYPE"),
        ('<!DOCTYPE lexicon SYSTEM "file:///etc/passwd"><lexicon/>', "DOCTYPE"),
        ("<speak/>", "root element"),
        (lexicon("", alphabet="x-sampa"), "unknown phoneme alphabet"),
        (lexicon("<lexeme><alias>x</alias></lexeme>"), "no <grapheme>"),
        (lexicon("<lexeme><grapheme>x</grapheme></lexeme>"), "no <alias> or <phoneme>"),
        (lexicon("<lexeme><grapheme> </grapheme><alias>x</alias></lexeme>"), "empty"),
        (lexicon("<lexeme><grapheme>New York</grapheme><alias>x</alias></lexeme>"), "whitespace"),
        (lexicon("<lexeme><grapheme>x</grapheme><alias> </alias></lexeme>"), "empty"),
        (lexicon("<lexeme><grapheme>x</grapheme><phoneme>[[a]]</phoneme></lexeme>"), r"\[\["),
        (
            lexicon("<lexeme><grapheme>x</grapheme><phoneme>ZZ9</phoneme></lexeme>", "x-cmu"),
            "ARPAbet",
        ),
    ],
)
def test_refusals_say_why(document: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_pls(document)


def test_not_utf8_is_refused() -> None:
    with pytest.raises(ValueError, match="UTF-8"):
        parse_pls(lexicon("").encode("utf-16"))


def test_too_many_graphemes() -> None:
    body = "".join(f"<lexeme><grapheme>w{n}</grapheme><alias>x</alias></lexeme>" for n in range(6))
    assert len(parse_pls(lexicon(body), max_rules=6)) == 6
    with pytest.raises(TooManyRules, match="at most 5"):
        parse_pls(lexicon(body), max_rules=5)


def test_rules_checked_when_made() -> None:
    with pytest.raises(ValueError, match="whitespace"):
        PronunciationRule("two words", alias="x")
    with pytest.raises(ValueError, match="alphabet"):
        PronunciationRule("x", phoneme="a", alphabet="sampa")
    with pytest.raises(ValueError, match="exactly one"):
        PronunciationRule("x")
