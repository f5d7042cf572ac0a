"""Number words (``voxflow.text.normalize.numbers``): cardinals, ordinals, years, decades and
numbers as written."""

import pytest

from voxflow.text.normalize.numbers import cardinal, decade, number, ordinal, year


@pytest.mark.parametrize(
    ("value", "spoken"),
    [
        (0, "zero"),
        (15, "fifteen"),
        (40, "forty"),
        (101, "one hundred one"),
        (1_000_001, "one million one"),
        (2_000_000_000_000, "two trillion"),
        (-7, "minus seven"),
    ],
)
def test_cardinal(value: int, spoken: str) -> None:
    assert cardinal(value) == spoken


def test_cardinal_past_the_trillions_is_read_digit_by_digit() -> None:
    assert cardinal(10**15) == "one " + " ".join(["zero"] * 15)


@pytest.mark.parametrize(
    ("value", "spoken"),
    [(1, "first"), (5, "fifth"), (8, "eighth"), (9, "ninth"), (12, "twelfth"), (20, "twentieth")],
)
def test_ordinal_irregulars(value: int, spoken: str) -> None:
    assert ordinal(value) == spoken


def test_years_and_decades() -> None:
    assert year(1999) == "nineteen ninety-nine"
    assert year(2010) == "twenty ten"
    assert year(2100) == "twenty-one hundred"
    assert year(999) == "nine hundred ninety-nine"
    assert decade(1960) == "nineteen sixties"
    assert decade(20) == "twenties"


def test_number_keeps_leading_zeros_and_reads_fractions_digit_by_digit() -> None:
    assert number("007") == "zero zero seven"
    assert number("10.05") == "ten point zero five"
    assert number("1,000.5") == "one thousand point five"
