"""Sentences sent as separate messages: a space where one ended and the next began, and nowhere
else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voxflow.text.messages import separate_sentences


@pytest.mark.parametrize(
    ("before", "message"),
    [
        ("Sure thing!", "The table is booked."),
        ("Is that all?", "Great."),
        ("Wait…", "Okay."),
        ('He said "no."', "Then he left."),
        ("It is done.)", "Next."),
        ("Hi.", '"Quoted," she said.'),
        ("¿Listo?", "¡Vamos!"),
        ("Ça va.", "Élodie arrive."),
        ("Call 911.", "Now."),
    ],
)
def test_a_sentence_end_then_a_capital_gets_a_space(before: str, message: str) -> None:
    assert separate_sentences(before, message) == " " + message


@pytest.mark.parametrize(
    ("before", "message"),
    [
        ("It costs 3.", "50 dollars."),  # a decimal number split across messages
        ("See e.g.", "the appendix."),  # lowercase: not a new sentence
        ("Done. ", "Next."),  # the space is already there
        ("Done.", " Next."),
        ("Done.\n", "Next."),
        ("Hello", "World"),  # no sentence end: tokens of one word stay joined
        ("Hello,", "World"),
        ("...", "Next."),  # punctuation alone ends no word
        ("", "Start."),
        ("End.", ""),
    ],
)
def test_everything_else_is_left_as_sent(before: str, message: str) -> None:
    assert separate_sentences(before, message) == message


@given(st.text(), st.text())
def test_only_ever_adds_one_space_in_front(before: str, message: str) -> None:
    joined = separate_sentences(before, message)
    assert joined in (message, " " + message)
    if joined != message:
        assert not before[-1:].isspace() and not message[:1].isspace()


@given(st.lists(st.text(alphabet="ab .!?\n", max_size=8), max_size=8))
def test_llm_tokens_that_carry_their_spaces_are_never_changed(tokens: list[str]) -> None:
    # LLM tokens start with their own space (" The"); lowercase pieces never start a sentence.
    text = ""
    for token in tokens:
        piece = " " + token.lstrip()
        assert separate_sentences(text, piece) == piece
        text += piece
