"""Clock times, time ranges and colon ratios (voxflow.text.normalize.times): what espeak-ng is
given, what it makes of it, and the map back to the written time. The spoken forms themselves
are in normalize_golden.tsv (sections "times" and "ratios")."""

from __future__ import annotations

import pytest

from voxflow.engines.phonemize import Phonemizer, text_words
from voxflow.text.normalize.normalizer import Normalizer

NORMALIZER = Normalizer()


@pytest.fixture(scope="module")
def phonemizer() -> Phonemizer:
    return Phonemizer("en-us")


def _phonemes(phonemizer: Phonemizer, text: str) -> str:
    return "".join(phonemizer.phonemes(text))


def _sounds(phonemizer: Phonemizer, text: str) -> str:
    """The phonemes without stress, palatalization, pauses and punctuation: what is said."""
    return "".join(char for char in _phonemes(phonemizer, text) if char not in "ˈˌʲ .,?!;:")


@pytest.mark.parametrize("written", ["10am", "10 am", "10 AM", "10 a.m.", "10:00 A.M."])
def test_a_m_is_said_as_its_two_letters(phonemizer: Phonemizer, written: str) -> None:
    spoken = NORMALIZER.normalize(written).text
    # "ten ay em": the letter A, then M; never the article "a" nor the word "am".
    assert _sounds(phonemizer, spoken) == "tɛneɪɛm", spoken


def test_the_letters_spelled_plainly_would_read_wrong(phonemizer: Phonemizer) -> None:
    # Why the spoken form says "eigh m": espeak-ng reads "a m" as the article and "am" as a word.
    assert _sounds(phonemizer, "ten a m") == "tɛnɐɛm"
    assert _sounds(phonemizer, "ten am") == "tɛnæm"


@pytest.mark.parametrize("written", ["10pm", "10:30 p.m.", "10.30PM"])
def test_p_m_is_said_as_its_two_letters(phonemizer: Phonemizer, written: str) -> None:
    assert _sounds(phonemizer, NORMALIZER.normalize(written).text).endswith("piːɛm")


def test_every_spoken_word_maps_back_to_the_written_time() -> None:
    result = NORMALIZER.normalize("Open 9am - 5pm, a 16:9 screen")
    pairs = []
    for word in text_words(result.text):
        start, end = result.to_source(word.char_start, word.char_end)
        pairs.append((word.word, result.source[start:end]))
    assert pairs == [
        ("Open", "Open"),
        ("nine", "9"),
        ("eigh", "am"),
        ("m", "am"),
        ("to", " - "),
        ("five", "5"),
        ("p", "pm"),
        ("m", "pm"),
        ("a", "a"),
        ("sixteen", "16"),
        ("to", ":"),
        ("nine", "9"),
        ("screen", "screen"),
    ]


def test_a_sentence_that_ends_on_am_still_ends_there(phonemizer: Phonemizer) -> None:
    # The abbreviation's period is the sentence's too: without it espeak-ng runs the two
    # sentences together in one intonation phrase.
    for written in ("We open at 10 am. Come early.", "We open at 10 a.m. Come early."):
        spoken = NORMALIZER.normalize(written).text
        assert spoken == "We open at ten eigh m. Come early."
    # ...but not before a lower-case word, where "a.m." is mid-sentence.
    assert NORMALIZER.normalize("at 10 a.m. today").text == "at ten eigh m today"


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("I am here", "I am here"),  # the verb
        ("AM radio", "AM radio"),  # no number before it
        ("3 amps", "three amps"),
        ("10 pmt", "ten pmt"),
        ("0am", "zero am"),  # no hour zero without minutes
        ("10.30", "ten point three zero"),  # a decimal without a.m./p.m.
        ("9 - 5", "nine - five"),  # a spaced hyphen between plain numbers may be a subtraction
        ("5pm - 2", "five p m - two"),  # a time, then a number: not a range of times
        ("10:60", "ten:sixty"),  # no such minute, nor a ratio (two digits after the colon)
        ("1:2:3", "one:two:three"),  # three terms: no sure reading
        ("localhost:8080", "localhost:eight thousand eighty"),  # a port, not a ratio
    ],
)
def test_what_is_not_a_time_or_a_ratio_stays_as_it_was(written: str, spoken: str) -> None:
    assert NORMALIZER.normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("9am-5pm", "nine eigh m to five p m"),
        ("9am – 5pm", "nine eigh m to five p m"),
        ("9am — 5pm", "nine eigh m to five p m"),
        ("9:00 am - 5:00 pm", "nine eigh m to five p m"),
        ("10:30 - 11:30", "ten thirty to eleven thirty"),
        ("10pm - midnight", "ten p m to midnight"),
        ("11pm-2am", "eleven p m to two eigh m"),
    ],
)
def test_a_dash_between_times_reads_to(written: str, spoken: str) -> None:
    assert NORMALIZER.normalize(written).text == spoken


def test_times_leave_no_digit_or_colon_for_espeak(phonemizer: Phonemizer) -> None:
    written = "From 9:05 am to 10.30pm, then 14:30 - 16:00, at 16:9 and 2:1."
    spoken = NORMALIZER.normalize(written).text
    assert not any(char.isdigit() or char == ":" for char in spoken), spoken
    phonemes = _phonemes(phonemizer, spoken)
    assert "kˈoʊlən" not in phonemes  # espeak-ng's "colon"
