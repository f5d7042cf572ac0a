"""``voxflow.text.say``: what each ``Say`` is spoken as, and clear errors for what it cannot
read."""

from __future__ import annotations

import pytest

from voxflow.text.normalize.normalizer import Normalizer
from voxflow.text.say import spoken_form
from voxflow.text.ssml import Say

NORMALIZER = Normalizer()


def _say_as(written: str, kind: str, form: str | None = None) -> str:
    return spoken_form(Say(written, 0, interpret_as=kind, format=form), NORMALIZER)


def test_an_alias_is_normalized_like_any_text() -> None:
    assert spoken_form(Say("WHO", 0, alias="World Health Org. in 2024"), NORMALIZER) == (
        NORMALIZER.normalize("World Health Org. in 2024").text
    )


@pytest.mark.parametrize(
    ("alphabet", "phonemes", "spoken"),
    [
        ("ipa", "təˈmɑːtoʊ", "[[ təmˈɑːtoʊ ]]"),  # the stress mark before its vowel
        ("ipa", "təmˈɑːtoʊ", "[[ təmˈɑːtoʊ ]]"),
        ("cmu-arpabet", "T AH0 M EY1 T OW2", "[[ təmˈeɪtˌoʊ ]]"),
        ("x-cmu", "T AH0 M EY1 T OW2", "[[ təmˈeɪtˌoʊ ]]"),
    ],
)
def test_phonemes_become_a_raw_phoneme_block(alphabet: str, phonemes: str, spoken: str) -> None:
    say = Say("tomato", 0, phonemes=phonemes, alphabet=alphabet)
    assert spoken_form(say, NORMALIZER) == spoken


@pytest.mark.parametrize(
    ("written", "kind", "form", "spoken"),
    [
        ("ABC-123", "characters", None, "eigh B C one two three"),
        ("hi", "spell-out", None, "h i"),
        ("4 0 7", "digits", None, "four zero seven"),
        ("1,234", "cardinal", None, "one thousand two hundred thirty-four"),
        ("1990", "cardinal", None, "one thousand nine hundred ninety"),
        ("-3.25", "cardinal", None, "minus three point two five"),
        ("3rd", "ordinal", None, "third"),
        ("21", "ordinal", None, "twenty-first"),
        (
            "+1 (555) 123-4567",
            "telephone",
            None,
            "plus one, five five five, one two three, four five six seven",
        ),
        ("03/05/2024", "date", None, "March fifth, twenty twenty-four"),
        ("05/03/2024", "date", "dmy", "March fifth, twenty twenty-four"),
        ("2024-03-05", "date", "ymd", "March fifth, twenty twenty-four"),
        ("Mar 5", "date", "md", "March fifth"),
        ("3/99", "date", "my", "March nineteen ninety-nine"),
        ("1999", "date", "y", "nineteen ninety-nine"),
        ("10:30", "time", None, "ten thirty"),
        ("$3.50", "currency", None, "three dollars and fifty cents"),
    ],
)  # fmt: skip
def test_say_as_reads_each_kind(written: str, kind: str, form: str | None, spoken: str) -> None:
    assert _say_as(written, kind, form) == spoken


@pytest.mark.parametrize(
    ("written", "kind", "form", "reason"),
    [
        ("--", "characters", None, "nothing to read as characters"),
        ("abc", "digits", None, "nothing to read as digits"),
        ("twelve", "cardinal", None, "not a number"),
        ("first", "ordinal", None, "not a number like 3 or 3rd"),
        ("none", "telephone", None, "has no digits"),
        ("13/05/2024", "date", None, "13 is not a month"),
        ("05/32/2024", "date", None, "32 is not a day"),
        ("2024", "date", "mdy", "does not have the parts"),
        ("1/2/3", "date", "yyy", "format 'yyy'"),
        ("Foo 5", "date", "md", "'Foo' is not a number"),
    ],
)
def test_what_a_kind_cannot_read_is_refused_clearly(
    written: str, kind: str, form: str | None, reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        _say_as(written, kind, form)
