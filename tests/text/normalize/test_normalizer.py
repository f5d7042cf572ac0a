"""voxflow.text.normalize.normalizer: golden spoken forms, the offset map and the modes."""

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxflow.engines.phonemize import Phonemizer, text_words
from voxflow.text.lexicon import Lexicon, LexiconEntry
from voxflow.text.normalize.normalizer import (
    NormalizationMode,
    Normalized,
    Normalizer,
    Override,
    Span,
    normalize_lines,
)

GOLDEN_PATH = Path(__file__).with_name("normalize_golden.tsv")


def load_golden() -> list[tuple[str, str]]:
    """``input<TAB>expected`` lines; blank lines and ``## section`` headers are skipped (a bare
    "#" cannot mark comments because "#5" is an input)."""
    cases: list[tuple[str, str]] = []
    for number_, line in enumerate(GOLDEN_PATH.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("## "):
            continue
        source, tab, expected = line.partition("\t")
        assert tab, f"line {number_} has no tab: {line!r}"
        cases.append((source, expected))
    return cases


GOLDEN = load_golden()
NORMALIZER = Normalizer()


def assert_valid_spans(result: Normalized) -> None:
    """Spans are ordered, cover the output exactly, stay inside the source and never move
    backwards; copied spans really are copies."""
    cursor = 0
    last_start = last_end = 0
    for span in result.spans:
        assert span.out_start == cursor
        assert span.out_end > span.out_start
        assert 0 <= span.src_start <= span.src_end <= len(result.source)
        assert span.src_start >= last_start
        assert span.src_end >= last_end
        if span.copied:
            out = result.text[span.out_start : span.out_end]
            assert out == result.source[span.src_start : span.src_end]
        cursor = span.out_end
        last_start, last_end = span.src_start, span.src_end
    assert cursor == len(result.text)


def source_of_words(result: Normalized) -> list[tuple[str, str]]:
    """Each spoken word with the original text it maps back to."""
    pairs: list[tuple[str, str]] = []
    for word in text_words(result.text):
        start, end = result.to_source(word.char_start, word.char_end)
        pairs.append((word.word, result.source[start:end]))
    return pairs


# -- golden file -------------------------------------------------------------------------------


def test_golden_file_is_large_and_covers_every_category() -> None:
    assert len(GOLDEN) >= 150
    headers = {
        line[3:]
        for line in GOLDEN_PATH.read_text(encoding="utf-8").splitlines()
        if line.startswith("## ")
    }
    for category in (
        "cardinals",
        "ordinals",
        "decimals",
        "negative numbers",
        "ranges",
        "years",
        "decades",
        "money",
        "percentages",
        "times",
        "dates",
        "phone numbers",
        "units",
        "abbreviations",
        "acronyms",
        "urls and emails",
        "symbols",
        "sentences",
    ):
        assert category in headers
    sources = [source for source, _ in GOLDEN]
    assert len(sources) == len(set(sources)), "duplicate golden inputs"


@pytest.mark.parametrize(("source", "expected"), GOLDEN, ids=[source for source, _ in GOLDEN])
def test_golden(source: str, expected: str) -> None:
    result = NORMALIZER.normalize(source)
    assert result.text == expected, f"input: {source!r}"
    assert result.source == source
    assert_valid_spans(result)


def test_golden_outputs_contain_only_words_and_prosody_punctuation() -> None:
    allowed = re.compile(r"[A-Za-z' \-.,?!;:\"()\[\]]*")
    for source, expected in GOLDEN:
        assert allowed.fullmatch(expected), f"{source!r} -> {expected!r}"


# -- offsets -----------------------------------------------------------------------------------


def test_replaced_token_maps_every_word_to_the_whole_token() -> None:
    result = NORMALIZER.normalize("It costs $3.50 today")
    assert result.text == "It costs three dollars and fifty cents today"
    assert source_of_words(result) == [
        ("It", "It"),
        ("costs", "costs"),
        ("three", "$3.50"),
        ("dollars", "$3.50"),
        ("and", "$3.50"),
        ("fifty", "$3.50"),
        ("cents", "$3.50"),
        ("today", "today"),
    ]


def test_multi_part_tokens_map_parts_to_their_own_source() -> None:
    result = NORMALIZER.normalize("Nov. 22, 2026 at 3:30 p.m. for 5 km")
    assert source_of_words(result) == [
        ("November", "Nov."),
        ("twenty-second", "22"),
        ("twenty", "2026"),
        ("twenty-six", "2026"),
        ("at", "at"),
        ("three", "3:30"),
        ("thirty", "3:30"),
        ("p", "p.m."),
        ("m", "p.m."),
        ("for", "for"),
        ("five", "5"),
        ("kilometers", "km"),
    ]


def test_inserted_separator_maps_to_an_empty_source_range() -> None:
    result = NORMALIZER.normalize("R&D")
    assert result.text == "R and D"
    assert result.to_source(1, 2) == (1, 1)
    assert result.to_source(2, 5) == (1, 2)
    assert result.to_source(0, 7) == (0, 3)


def test_copied_text_maps_character_for_character() -> None:
    result = NORMALIZER.normalize("Hello brave world, $5 later")
    assert result.to_source(6, 11) == (6, 11)
    assert result.to_source(7, 9) == (7, 9)
    assert result.to_source(0, 0) == (0, 0)
    five = result.text.index("five")
    assert result.to_source(five, five + 4) == (19, 21)
    assert result.to_source(five + 1, five + 2) == (19, 21)
    later = result.text.index("later")
    assert result.to_source(later, later + 5) == (22, 27)


def test_range_across_spans_covers_both_ends() -> None:
    result = NORMALIZER.normalize("pay $5 now")
    assert result.to_source(0, len(result.text)) == (0, 10)
    assert result.to_source(2, result.text.index("dollars")) == (2, 6)


def test_to_source_rejects_ranges_outside_the_text() -> None:
    result = NORMALIZER.normalize("$5")
    with pytest.raises(ValueError, match="outside"):
        result.to_source(0, len(result.text) + 1)
    with pytest.raises(ValueError, match="outside"):
        result.to_source(3, 2)


def test_empty_text() -> None:
    result = NORMALIZER.normalize("")
    assert result == Normalized("", "", ())
    assert result.to_source(0, 0) == (0, 0)


TRICKY = [
    "$3.50",
    "$1",
    "€1.2M",
    "$5-10",
    "-5",
    "−0.3",
    "1,234,567",
    "3.14",
    "22nd",
    "1999",
    "'90s",
    "50%",
    "5-10",
    "10–20",
    "3:30 p.m.",
    "14:05",
    "3pm",
    "2026-11-22",
    "Nov. 22, 2026",
    "11/22/2026",
    "(555) 123-4567",
    "+1 555 123 4567",
    "5 km",
    "72°F",
    "Dr.",
    "St.",
    "etc.",
    "e.g.",
    "No. 5",
    "U.S.",
    "FBI",
    "APIs",
    "NASA",
    "World War II",
    "https://example.com/a-b?x=1",
    "www.voxflow.ai",
    "jane.doe@example.com",
    "R&D",
    "#5",
    "C++",
    "MP3",
    "v1.2.3",
    "½",
    "hello",
    "it's",
    "...",
    "!",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TRICKY), min_size=1, max_size=8), st.data())
def test_spans_are_valid_for_any_mix_of_tricky_tokens(
    tokens: list[str], data: st.DataObject
) -> None:
    separators = data.draw(
        st.lists(st.sampled_from([" ", "", ", ", "-", "/", "\n"]), min_size=len(tokens))
    )
    text = "".join(token + sep for token, sep in zip(tokens, separators, strict=False))
    result = NORMALIZER.normalize(text)
    assert result.source == text
    assert_valid_spans(result)
    for word in text_words(result.text):
        start, end = result.to_source(word.char_start, word.char_end)
        assert 0 <= start <= end <= len(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TRICKY), min_size=1, max_size=8))
def test_every_spoken_word_maps_into_the_token_it_came_from(tokens: list[str]) -> None:
    # "; " never joins two tokens into one reading, so each token is read on its own.
    ranges: list[tuple[int, int]] = []
    cursor = 0
    for token in tokens:
        ranges.append((cursor, cursor + len(token)))
        cursor += len(token) + 2
    text = "; ".join(tokens)
    result = NORMALIZER.normalize(text)
    assert_valid_spans(result)
    for word in text_words(result.text):
        start, end = result.to_source(word.char_start, word.char_end)
        assert start < end, word
        owner = [r for r in ranges if r[0] <= start and end <= r[1]]
        assert owner, f"{word.word!r} maps to {text[start:end]!r}, across tokens of {text!r}"
        alone = NORMALIZER.normalize(text[owner[0][0] : owner[0][1]]).text
        assert word.word.strip(".") in alone


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("0123456789 .,-–:/$€%°&@#+'()aAmMpsStTkKgG")), max_size=40
    )
)
def test_spans_are_valid_for_arbitrary_text(text: str) -> None:
    assert_valid_spans(NORMALIZER.normalize(text))


# -- modes and helpers -------------------------------------------------------------------------


def test_off_is_identity() -> None:
    text = "Dr. Smith paid $3.50 on 2026-11-22."
    result = NORMALIZER.normalize(text, NormalizationMode.OFF)
    assert result.text == text
    assert result.spans == (Span(0, len(text), 0, len(text), copied=True),)
    assert result.to_source(4, 9) == (4, 9)
    assert NORMALIZER.normalize(text, "off").text == text  # type: ignore[arg-type]


@pytest.mark.parametrize(("source", "expected"), GOLDEN[::7])
def test_auto_equals_on(source: str, expected: str) -> None:
    auto = NORMALIZER.normalize(source, NormalizationMode.AUTO)
    assert auto == NORMALIZER.normalize(source, NormalizationMode.ON)
    assert auto.text == expected


def test_default_mode_is_auto() -> None:
    assert NORMALIZER.normalize("$5").text == "five dollars"


def test_words_pass_through_unchanged() -> None:
    text = "The quick brown fox, it's true; isn't it?"
    result = NORMALIZER.normalize(text)
    assert result.text == text
    assert all(span.copied for span in result.spans)


def test_shouted_text_keeps_words_but_spells_known_acronyms() -> None:
    assert NORMALIZER.normalize("WE LOVE THE FBI AND NASA").text == "WE LOVE THE F B I AND NASA"
    assert NORMALIZER.normalize("We love the RAM").text == "We love the RAM"
    assert NORMALIZER.normalize("We love the RTX").text == "We love the R T X"


def test_normalize_lines_yields_one_spoken_line_per_input_line() -> None:
    lines = ["I paid $5.\n", "\n", "See you at 9:00\r\n", "plain"]
    assert list(normalize_lines(lines, NORMALIZER)) == [
        "I paid five dollars.",
        "",
        "See you at nine o'clock",
        "plain",
    ]


# -- espeak-ng sees only words -----------------------------------------------------------------

ESPEAK_CASES = [
    "It costs $3.50, not $1,234.",
    "On 2026-11-22 at 3:30 p.m. the FBI called (555) 123-4567.",
    "Temperatures hit 72°F vs. -5°C; that's 50% of 1999's.",
    "Visit https://example.com/path or mail jane.doe@example.com.",
]


@pytest.fixture(scope="module")
def phonemizer() -> Phonemizer:
    return Phonemizer("en-us")


@pytest.mark.parametrize("source", ESPEAK_CASES)
def test_espeak_receives_only_words(phonemizer: Phonemizer, source: str) -> None:
    spoken = NORMALIZER.normalize(source).text
    assert not re.search(r"[0-9$€£%°@#&+=/]", spoken), spoken
    phonemized = phonemizer.phonemize(spoken)
    # espeak-ng neither dropped a word nor had to read a symbol: every word produced phonemes
    # and no phoneme string contains a digit.
    assert phonemized.words
    for word, (start, end) in zip(phonemized.words, phonemized.word_phonemes, strict=True):
        assert end > start, word
    assert not any(char.isdigit() for char in "".join(phonemized.phonemes))


def test_espeak_reads_the_raw_forms_differently(phonemizer: Phonemizer) -> None:
    # The reason this module exists: espeak-ng's own reading of "$3.50" differs from ours.
    raw = "".join(phonemizer.phonemes("$3.50"))
    ours = "".join(phonemizer.phonemes(NORMALIZER.normalize("$3.50").text))
    assert raw != ours
    assert ours == "".join(phonemizer.phonemes("three dollars and fifty cents"))


def test_a_text_said_again_is_normalized_once_and_the_result_shared() -> None:
    normalizer = Normalizer()
    first = normalizer.normalize("It costs $3.50 at 10am.")
    again = normalizer.normalize("It costs $3.50 at 10am.")
    assert again is first  # remembered (a Normalized is immutable)
    assert normalizer.normalize("It costs $3.50 at 10am.", NormalizationMode.OFF) is not first
    for n in range(Normalizer.MEMO_ENTRIES):
        normalizer.normalize(f"Order {n}.")
    assert normalizer.normalize("It costs $3.50 at 10am.") is not first  # pushed out
    assert normalizer.normalize("It costs $3.50 at 10am.").text == first.text


# -- overrides (SSML's sub, phoneme and say-as) ------------------------------------------------


def test_an_override_replaces_its_range_in_every_mode_and_maps_back_whole() -> None:
    normalizer = Normalizer()
    text = "The UN met at 5pm."
    override = Override(4, 6, "United Nations")
    for mode in NormalizationMode:
        result = normalizer.normalize(text, mode, (override,))
        assert "United Nations" in result.text
        start = result.text.index("United")
        assert result.to_source(start, start + len("United")) == (4, 6)
        assert result.to_source(start + 7, start + 14) == (4, 6)
    assert normalizer.normalize(text, NormalizationMode.ON, (override,)).text.endswith("five p m.")
    assert normalizer.normalize(text, NormalizationMode.OFF, (override,)).text.endswith("5pm.")


def test_an_override_wins_over_the_lexicon_and_rules_never_read_into_it() -> None:
    normalizer = Normalizer(Lexicon([LexiconEntry("UN", respelling="you en")]))
    assert normalizer.normalize("UN", overrides=(Override(0, 2, "United Nations"),)).text == (
        "United Nations"
    )
    # "$3" would read "three dollars" with the "3" inside the override: it stays "$".
    result = normalizer.normalize("$3", overrides=(Override(1, 2, "three"),))
    assert result.text.endswith("three")
    assert result.to_source(len(result.text) - 5, len(result.text)) == (1, 2)
    # An override inside a word: the letters around it are spoken as written.
    assert normalizer.normalize("foobar", overrides=(Override(3, 6, "bee"),)).text == "foo bee"


def test_the_same_text_with_other_overrides_is_not_served_from_the_memo() -> None:
    normalizer = Normalizer()
    assert normalizer.normalize("UN").text == "U N"
    assert normalizer.normalize("UN", overrides=(Override(0, 2, "United Nations"),)).text == (
        "United Nations"
    )
    assert normalizer.normalize("UN").text == "U N"
