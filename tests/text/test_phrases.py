"""Tests for voxflow.text.phrases: phrase starters and the spoken-cost estimate."""

import pytest

from voxflow.text.normalize.normalizer import NormalizationMode, Normalizer
from voxflow.text.phrases import spoken_cost, starts_phrase


@pytest.mark.parametrize("word", ["and", "To", "with", "because", "which", "(for", "“that"])
def test_phrase_starters(word: str) -> None:
    assert starts_phrase(word)


@pytest.mark.parametrize("word", ["of", "the", "appointment", "fortunately", "", "android"])
def test_words_that_do_not_start_a_phrase(word: str) -> None:
    assert not starts_phrase(word)


def test_plain_text_costs_its_length() -> None:
    assert spoken_cost("I can help you today.") == len("I can help you today.")


@pytest.mark.parametrize(
    "text",
    ["$1,234.56", "555-123-4567", "12.5%", "11/22/2026", "Order #48213", "3:30 p.m."],
)
def test_cost_of_written_forms_tracks_their_spoken_length(text: str) -> None:
    spoken = Normalizer().normalize(text, NormalizationMode.AUTO).text
    # An estimate: within a factor of two of what the normalizer really says, and never the
    # written length when the spoken form is much longer.
    assert 0.5 * len(spoken) <= spoken_cost(text) <= 2.0 * len(spoken), spoken
