"""The reports' statistics: the paired sign-flip test."""

from __future__ import annotations

import itertools

import pytest

from voxflow_bench.stats import PairedDifference


def _by_enumeration(first: list[int], second: list[int]) -> float:
    diffs = [a - b for a, b in zip(first, second, strict=True)]
    total = sum(diffs)
    signs = list(itertools.product((1, -1), repeat=len(diffs)))
    return sum(
        sum(s * d for s, d in zip(sign, diffs, strict=True)) >= total for sign in signs
    ) / len(signs)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ([3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]),
        ([5, 5, 5, 5, 5], [1, 2, 3, 4, 5]),
        ([0, 0, 1, 0, 2, 0, 0, 7, 1], [1, 0, 0, 0, 0, 3, 0, 0, 1]),
    ],
)
def test_the_p_value_is_the_share_of_sign_assignments_at_least_as_large(
    first: list[int], second: list[int]
) -> None:
    # Zero differences change no total, so the exact count over the non-zero ones is the
    # share over every assignment.
    assert PairedDifference.of(first, second).p == pytest.approx(_by_enumeration(first, second))


def test_counts_and_direction() -> None:
    worse = PairedDifference.of([2, 3, 4, 0], [1, 1, 1, 0])
    assert (worse.total, worse.larger, worse.smaller) == (6, 3, 0)
    assert worse.p == pytest.approx(1 / 8)  # only all three signs as seen reach 6
    better = PairedDifference.of([1, 1, 1], [2, 3, 4])
    assert better.total == -6 and better.p == 1.0  # every assignment reaches -6


def test_a_difference_chance_does_not_explain_is_small_and_one_it_does_is_not() -> None:
    assert PairedDifference.of([3] * 12, [1] * 12).p < 0.001  # 2**-12
    balanced = PairedDifference.of([2, 0] * 6, [0, 2] * 6)
    assert balanced.total == 0 and balanced.p > 0.5


def test_no_difference_and_no_items() -> None:
    assert PairedDifference.of([4, 0], [4, 0]).p == 1.0
    assert PairedDifference.of([], []).p == 1.0


def test_the_counts_must_cover_the_same_items() -> None:
    with pytest.raises(ValueError, match="same items"):
        PairedDifference.of([1, 2], [1])


def test_as_dict() -> None:
    assert PairedDifference.of([2, 0], [0, 0]).as_dict() == {
        "total": 2,
        "larger": 1,
        "smaller": 0,
        "p": 0.5,
    }
