"""Tests for voxflow.text.ipa: stress marks moved from a syllable's onset to its vowel."""

from __future__ import annotations

import pytest

from voxflow.text.arpabet import to_ipa
from voxflow.text.ipa import espeak_stress
from voxflow.text.lexicon import phoneme_block


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("ˈwɛðɚ", "wˈɛðɚ"),  # the onset before the vowel
        ("ˈstɹiːt", "stɹˈiːt"),  # a cluster
        ("təˈmeɪɾoʊ", "təmˈeɪɾoʊ"),  # mid-word, a diphthong
        ("ˌʌndɚˈstænd", "ˌʌndɚstˈænd"),  # secondary before a vowel already; primary moved
        ("ˈaɪ", "ˈaɪ"),  # no onset
        ("ˈhoʊm ˈɹʌn", "hˈoʊm ɹˈʌn"),  # each word its own
        ("ˈbʌ.tɚ", "bˈʌ.tɚ"),
    ],
)
def test_a_mark_moves_over_its_onset_to_the_vowel(written: str, read: str) -> None:
    assert espeak_stress(written) == read


@pytest.mark.parametrize(
    "written",
    [
        "bˈʌtn̩",  # already espeak's
        "ˈn̩",  # a syllabic consonant: no vowel to move to
        "kˈ",  # a mark at the end
        "ˈst ɑp",  # a space before the vowel: another word
        "ˈs.tɑp",  # a syllable break before the vowel
        "wɛðɚ",  # no mark
        "",
    ],
)
def test_a_mark_with_its_vowel_or_without_one_in_its_syllable_stays(written: str) -> None:
    assert espeak_stress(written) == written


def test_it_is_idempotent_and_keeps_every_character() -> None:
    for written in ("ˈwɛðɚ", "ˌʌndɚˈstænd", "ˈst ɑp", "təˈmeɪɾoʊ"):
        once = espeak_stress(written)
        assert espeak_stress(once) == once
        assert sorted(once) == sorted(written)


def test_arpabet_already_places_marks_before_vowels() -> None:
    for arpabet in ("W EH1 DH ER0", "T AH0 M EY1 T OW2", "S T R IY1 T"):
        ipa = to_ipa(arpabet)
        assert espeak_stress(ipa) == ipa


def test_every_phoneme_block_a_user_writes_is_placed() -> None:
    assert phoneme_block(" ˈwɛðɚ ") == "[[ wˈɛðɚ ]]"
