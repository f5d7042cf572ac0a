"""Tests for voxflow.text.buffer: chunking rules, flushing, offsets and chunking independence."""

import itertools
import time
from dataclasses import FrozenInstanceError

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.buffer_runs import check_segments, run, split_at, texts
from tests.support.segment_texts import GOLDEN_TEXTS, tricky_text
from voxflow.text.buffer import TextBuffer, segment_text
from voxflow.text.chunking import ChunkingConfig, Segment, SegmentEnd, Strategy, every_sentence


def ends(segments: list[Segment]) -> list[SegmentEnd]:
    return [segment.boundary for segment in segments]


SENTENCE = ChunkingConfig(strategy=Strategy.SENTENCE)


# --- holding and confirmation -----------------------------------------------------------------


def test_sentence_is_held_until_the_next_word_confirms_it() -> None:
    buffer = TextBuffer(SENTENCE)
    assert buffer.feed("Hello there.") == []
    assert buffer.feed("   ") == []
    [segment] = buffer.feed(" How")
    assert segment == Segment("Hello there.", 0, 12, SegmentEnd.SENTENCE, 0, True)
    assert buffer.buffered == "    How"


def test_refuted_candidate_is_not_emitted() -> None:
    buffer = TextBuffer(SENTENCE)
    assert buffer.feed("We met Dr.") == []
    assert buffer.feed(" Smith") == []
    assert buffer.buffered == "We met Dr. Smith"


def test_whitespace_only_input_never_produces_segments() -> None:
    buffer = TextBuffer(SENTENCE)
    assert buffer.feed("  \n\n ") == []
    assert buffer.flush() == []
    assert run(SENTENCE, ["", " ", "\t"]) == []


# --- schedules and strategies -----------------------------------------------------------------


def test_sentence_strategy_emits_every_sentence() -> None:
    segments = run(SENTENCE, ["One. Two three. Four!"])
    assert texts(segments) == ["One.", "Two three.", "Four!"]
    assert ends(segments) == [SegmentEnd.SENTENCE, SegmentEnd.SENTENCE, SegmentEnd.FLUSH]
    assert [s.index for s in segments] == [0, 1, 2]
    assert [s.turn_first for s in segments] == [True, False, False]


def test_schedule_minimums_merge_short_sentences_and_last_entry_repeats() -> None:
    config = ChunkingConfig(strategy=Strategy.SENTENCE, chunk_length_schedule=(10, 30))
    text = "Hi. This is a test. Another one here. Short. And a final sentence. Ok."
    assert texts(run(config, [text])) == [
        "Hi. This is a test.",  # "Hi." is shorter than 10
        "Another one here. Short. And a final sentence.",  # needs >= 30
        "Ok.",  # the 30 repeats; only the flush ends it
    ]


def test_schedule_counts_from_first_non_space_character() -> None:
    config = ChunkingConfig(strategy=Strategy.SENTENCE, chunk_length_schedule=(12,))
    # "Hello there." is exactly 12 characters; the leading spaces do not count.
    segments = run(config, ["     Hello there. Go"])
    assert segments[0] == Segment("Hello there.", 5, 17, SegmentEnd.SENTENCE, 0, True)


def test_adaptive_default_first_clause_then_long_sentences() -> None:
    text = (
        "Well, hello there, my friend, how are you? I am fine. It is sunny. "
        "The sky is blue and clear today. Bye now."
    )
    segments = run(ChunkingConfig(lead_cost=None), [text])
    assert texts(segments) == [
        "Well, hello there, my friend,",
        "how are you? I am fine. It is sunny. The sky is blue and clear today.",
        "Bye now.",
    ]
    assert ends(segments) == [SegmentEnd.CLAUSE, SegmentEnd.SENTENCE, SegmentEnd.FLUSH]


def test_adaptive_first_segment_may_end_at_a_sentence() -> None:
    segments = run(ChunkingConfig(lead_cost=None), ["Hi! How can I help you today? I am"])
    assert segments[0].text == "Hi! How can I help you today?"
    assert segments[0].boundary is SegmentEnd.SENTENCE
    # With the first segment's cost bounded (the default), a first sentence of any length ends
    # it: a whole sentence is the cheapest first segment with the right prosody.
    segments = run(ChunkingConfig(), ["Hi! How can I help you today? I am"])
    assert texts(segments) == ["Hi!", "How can I help you today? I am"]
    assert [s.lead for s in segments] == [False, False]


def test_adaptive_later_segments_ignore_clauses() -> None:
    config = ChunkingConfig(chunk_length_schedule=(1,))
    segments = run(config, ["First, second, third. Fourth, fifth. Six"])
    assert texts(segments) == ["First,", "second, third.", "Fourth, fifth.", "Six"]


def test_fixed_strategy_cuts_at_first_word_boundary_past_fixed_chars() -> None:
    config = ChunkingConfig(strategy=Strategy.FIXED, fixed_chars=20)
    text = "The quick brown fox jumps over the lazy dog and runs far away."
    segments = run(config, [text])
    assert texts(segments) == [
        "The quick brown fox jumps",
        "over the lazy dog and",
        "runs far away.",
    ]
    assert all(len(s.text) >= 20 for s in segments[:-1])


def test_word_strategy_counts_words() -> None:
    config = ChunkingConfig(strategy=Strategy.WORD, words_per_chunk=3)
    segments = run(config, ["one two, three four five. six seven"])
    assert texts(segments) == ["one two, three", "four five. six", "seven"]
    assert ends(segments) == [SegmentEnd.WORD, SegmentEnd.WORD, SegmentEnd.FLUSH]


def test_word_strategy_schedule_is_in_words() -> None:
    config = ChunkingConfig(strategy=Strategy.WORD, chunk_length_schedule=(1, 2))
    assert texts(run(config, ["a bb ccc dd e ff g"])) == ["a", "bb ccc", "dd e", "ff g"]


def test_auto_mode_ignores_schedule_and_strategy() -> None:
    config = ChunkingConfig(
        strategy=Strategy.WORD, chunk_length_schedule=(200,), auto_mode=True, max_chars=200
    )
    segments = run(config, ["One. Two three, four. Five"])
    assert texts(segments) == ["One.", "Two three, four.", "Five"]


def test_auto_mode_still_respects_max_chars() -> None:
    config = ChunkingConfig(auto_mode=True, max_chars=20)
    segments = run(config, ["alpha beta, gamma delta epsilon zeta. Eta"])
    assert texts(segments) == ["alpha beta,", "gamma delta epsilon", "zeta.", "Eta"]


def test_effective_schedules() -> None:
    assert SENTENCE.effective_schedule == (1,)
    assert ChunkingConfig().effective_schedule == (20, 60)
    assert ChunkingConfig(max_chars=40).effective_schedule == (20, 40)
    assert ChunkingConfig(strategy=Strategy.FIXED, fixed_chars=33).effective_schedule == (33,)
    assert ChunkingConfig(strategy=Strategy.WORD, words_per_chunk=4).effective_schedule == (4,)
    explicit = ChunkingConfig(strategy=Strategy.FIXED, chunk_length_schedule=(5, 9))
    assert explicit.effective_schedule == (5, 9)


# --- max_chars --------------------------------------------------------------------------------


def test_max_chars_prefers_a_clause() -> None:
    config = ChunkingConfig(strategy=Strategy.SENTENCE, max_chars=20)
    segments = run(config, ["aaaa, bbbb cccc dddd eeee ffff."])
    assert texts(segments) == ["aaaa,", "bbbb cccc dddd eeee", "ffff."]
    assert ends(segments) == [SegmentEnd.CLAUSE, SegmentEnd.WORD, SegmentEnd.FLUSH]


def test_max_chars_prefers_the_latest_of_equally_strong_boundaries() -> None:
    config = ChunkingConfig(strategy=Strategy.SENTENCE, max_chars=30)
    segments = run(config, ["aa, bb, cc dd ee ff gg, hh ii jj kk."])
    assert segments[0].text == "aa, bb, cc dd ee ff gg,"


def test_max_chars_falls_back_to_last_word_before_the_minimum() -> None:
    config = ChunkingConfig(strategy=Strategy.FIXED, fixed_chars=20, max_chars=20)
    segments = run(config, ["aaaaaaaaaaaaaa bbbbbbbbbbbbbbbb c"])
    assert texts(segments) == ["aaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb c"]


def test_max_chars_hard_cuts_an_overlong_word() -> None:
    config = ChunkingConfig(strategy=Strategy.SENTENCE, max_chars=20)
    segments = run(config, ["x" * 50])
    assert texts(segments) == ["x" * 20, "x" * 20, "x" * 10]
    assert ends(segments) == [SegmentEnd.CUT, SegmentEnd.CUT, SegmentEnd.FLUSH]
    assert [(s.start, s.end) for s in segments] == [(0, 20), (20, 40), (40, 50)]


def test_max_chars_cut_waits_until_the_cap_is_settled() -> None:
    config = ChunkingConfig(strategy=Strategy.SENTENCE, max_chars=20)
    buffer = TextBuffer(config)
    # 20 characters: a boundary at exactly 20 is still possible, so nothing is decided.
    assert buffer.feed("aaaa bbbb cccc dddd.") == []
    assert texts(buffer.feed(" E")) == ["aaaa bbbb cccc dddd."]


def test_text_over_max_chars_is_cut_before_flush() -> None:
    config = ChunkingConfig(strategy=Strategy.SENTENCE, max_chars=20)
    buffer = TextBuffer(config)
    fed = buffer.feed("one two three four five six seven eight ")
    assert texts(fed) == ["one two three four"]
    flushed = buffer.flush()
    assert flushed == [Segment("five six seven eight", 19, 39, SegmentEnd.FLUSH, 1, False)]


# --- flush, turns, idle -----------------------------------------------------------------------


def test_flush_emits_one_segment_and_resets_the_turn() -> None:
    buffer = TextBuffer(ChunkingConfig(lead_cost=None))
    assert buffer.feed("Short one. Two.") == []
    [first] = buffer.flush()
    assert first == Segment("Short one. Two.", 0, 15, SegmentEnd.FLUSH, 0, True)
    assert buffer.buffered == ""
    assert buffer.feed(" Next turn, with a clause here.") == []
    [second] = buffer.feed(" And")
    assert second.text == "Next turn, with a clause here."
    assert (second.start, second.index, second.turn_first) == (16, 0, True)


@pytest.mark.parametrize(
    ("text", "boundary"),
    [
        ("Hello there.", SegmentEnd.SENTENCE),
        ("Well,", SegmentEnd.CLAUSE),
        ("in the", SegmentEnd.WORD),
    ],
)
def test_a_cut_ends_a_segment_at_what_the_text_ends_with(text: str, boundary: SegmentEnd) -> None:
    buffer = TextBuffer(ChunkingConfig())
    assert buffer.feed(text + " ") == []
    [segment] = buffer.cut()
    assert (segment.text, segment.boundary, segment.lead) == (text, boundary, False)
    assert buffer.cut() == []  # nothing is left


def test_a_cut_keeps_the_turn_and_is_never_a_lead() -> None:
    buffer = TextBuffer(ChunkingConfig())
    assert buffer.feed("I think") == []
    [first] = buffer.cut(SegmentEnd.WORD)
    assert (first.index, first.turn_first, first.lead) == (0, True, False)
    assert buffer.feed(" that we should go. And") == []  # a later segment: whole sentences
    [second] = buffer.cut(SegmentEnd.SENTENCE)
    assert (second.text, second.start, second.boundary) == (
        "that we should go. And",
        8,
        SegmentEnd.SENTENCE,
    )
    assert (second.index, second.turn_first, second.lead) == (1, False, False)


def test_a_buffer_reconfigured_between_cuts_cuts_by_its_new_rule() -> None:
    buffer = TextBuffer(ChunkingConfig())
    assert buffer.feed("One. Two. Three. Four") == [
        Segment("One.", 0, 4, SegmentEnd.SENTENCE, 0, True)
    ]
    with pytest.raises(ValueError, match="holds text"):
        buffer.reconfigure(every_sentence(ChunkingConfig()))
    buffer.cut()
    buffer.reconfigure(every_sentence(ChunkingConfig()))
    assert [s.text for s in buffer.feed(" Five. Six. Seven")] == ["Five.", "Six."]
    assert every_sentence(ChunkingConfig(auto_mode=True)) == ChunkingConfig(auto_mode=True)
    assert every_sentence(ChunkingConfig()).effective_schedule == (20, 1)


def test_flush_resets_index_even_without_text() -> None:
    buffer = TextBuffer(SENTENCE)
    assert [s.index for s in buffer.feed("A b. C d. E")] == [0, 1]
    buffer.flush()
    assert buffer.flush() == []
    [segment] = buffer.feed(" F g. H")
    assert (segment.text, segment.index, segment.turn_first) == ("F g.", 0, True)


def test_offsets_continue_across_turns() -> None:
    buffer = TextBuffer(SENTENCE)
    stream = ""
    segments: list[Segment] = []
    for piece in ["Hi there. ", "Bye", "\n\n", "New. Turn", " here. X"]:
        stream += piece
        segments.extend(buffer.feed(piece))
        if piece == "Bye":
            segments.extend(buffer.flush())
    segments.extend(buffer.flush())
    for segment in segments:
        assert stream[segment.start : segment.end] == segment.text
    assert texts(segments) == ["Hi there.", "Bye", "New.", "Turn here.", "X"]
    assert [s.index for s in segments] == [0, 1, 0, 1, 2]


def test_idle_deadline_and_poll() -> None:
    buffer = TextBuffer(ChunkingConfig(idle_flush_s=0.5))
    assert buffer.idle_deadline() is None
    buffer.feed("   ", now=1.0)
    assert buffer.idle_deadline() is None  # whitespace alone is never flushed
    buffer.feed("Hello", now=10.0)
    assert buffer.idle_deadline() == 10.5
    buffer.feed(" there", now=10.2)
    assert buffer.idle_deadline() == pytest.approx(10.7)
    assert buffer.poll(10.69) == []
    [segment] = buffer.poll(10.7)
    assert segment == Segment("Hello there", 3, 14, SegmentEnd.FLUSH, 0, True)
    assert buffer.idle_deadline() is None
    assert buffer.poll(100.0) == []


def test_idle_flush_starts_a_new_turn() -> None:
    buffer = TextBuffer(ChunkingConfig(strategy=Strategy.SENTENCE, idle_flush_s=1.0))
    assert texts(buffer.feed("One. Two", now=0.0)) == ["One."]
    [idle] = buffer.poll(5.0)
    assert (idle.text, idle.index) == ("Two", 1)
    [after] = buffer.feed(" Three. Four", now=6.0)
    assert (after.text, after.index, after.turn_first) == ("Three.", 0, True)


def test_no_idle_flush_without_idle_setting() -> None:
    buffer = TextBuffer(SENTENCE)
    buffer.feed("pending text", now=0.0)
    assert buffer.idle_deadline() is None
    assert buffer.poll(1e9) == []
    assert buffer.buffered == "pending text"


def test_feed_defaults_to_monotonic_clock() -> None:
    buffer = TextBuffer(ChunkingConfig(idle_flush_s=30.0))
    before = time.monotonic()
    buffer.feed("text")
    deadline = buffer.idle_deadline()
    assert deadline is not None
    assert before + 30.0 <= deadline <= time.monotonic() + 30.0


# --- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategy": "bogus"}, "strategy must be one of"),
        ({"chunk_length_schedule": ()}, "non-empty"),
        ({"chunk_length_schedule": "12"}, "non-empty tuple"),
        ({"chunk_length_schedule": (10, 0)}, r"chunk_length_schedule\[1\] must be between"),
        ({"chunk_length_schedule": (10, -5)}, r"chunk_length_schedule\[1\]"),
        ({"chunk_length_schedule": (1.5,)}, "must be an int"),
        ({"chunk_length_schedule": (True,)}, "must be an int"),
        ({"chunk_length_schedule": (300,)}, r"max_chars \(250\)"),
        ({"max_chars": 19}, "max_chars must be >= 20"),
        ({"max_chars": 100.0}, "max_chars must be an int"),
        ({"fixed_chars": 0}, "fixed_chars must be >= 1"),
        ({"strategy": Strategy.FIXED, "fixed_chars": 251}, "fixed_chars must be between"),
        ({"words_per_chunk": 0}, "words_per_chunk must be >= 1"),
        ({"strategy": Strategy.WORD, "words_per_chunk": 300}, "words_per_chunk must be between"),
        ({"idle_flush_s": 0}, "idle_flush_s"),
        ({"idle_flush_s": -1.0}, "idle_flush_s"),
        ({"idle_flush_s": float("inf")}, "idle_flush_s"),
        ({"idle_flush_s": True}, "idle_flush_s"),
        ({"auto_mode": 1}, "auto_mode must be a bool"),
    ],
)
def test_config_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChunkingConfig(**kwargs)  # type: ignore[arg-type]


def test_config_normalises_strategy_and_schedule() -> None:
    config = ChunkingConfig(strategy="word", chunk_length_schedule=[3, 4])  # type: ignore[arg-type]
    assert config.strategy is Strategy.WORD
    assert config.chunk_length_schedule == (3, 4)
    # fixed_chars may exceed max_chars while another strategy is in force.
    assert ChunkingConfig(max_chars=20).fixed_chars == 60
    with pytest.raises(FrozenInstanceError):
        config.max_chars = 10  # type: ignore[misc]


# --- invariants -------------------------------------------------------------------------------

CONFIGS = [
    SENTENCE,
    ChunkingConfig(strategy=Strategy.SENTENCE, max_chars=40),
    ChunkingConfig(),
    ChunkingConfig(max_chars=30),
    ChunkingConfig(strategy=Strategy.FIXED, fixed_chars=15, max_chars=30),
    ChunkingConfig(strategy=Strategy.WORD, words_per_chunk=3, max_chars=20),
    ChunkingConfig(strategy=Strategy.SENTENCE, chunk_length_schedule=(5, 25), max_chars=25),
    ChunkingConfig(auto_mode=True, max_chars=20),
    ChunkingConfig(chunk_length_schedule=(1,), max_chars=20),
    ChunkingConfig(lead_cost=(5, 12)),
    ChunkingConfig(auto_mode=True, lead_cost=(3, 9), max_chars=30),
]
CONFIG_IDS = [f"config{i}" for i in range(len(CONFIGS))]


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_golden_texts_segment_consistently(config: ChunkingConfig) -> None:
    stream = "\n".join(GOLDEN_TEXTS)
    whole = run(config, [stream])
    check_segments(stream, whole, config)
    assert run(config, list(stream)) == whole


@settings(max_examples=400, deadline=None)
@given(
    config=st.sampled_from(CONFIGS),
    words=st.lists(
        st.one_of(tricky_text(), st.sampled_from(["x" * 23, "y" * 41, "z-z-z-z-z-z-z-z-z-z-z"])),
        min_size=1,
        max_size=4,
    ),
    data=st.data(),
)
def test_any_chunking_gives_the_same_segments(
    config: ChunkingConfig, words: list[str], data: st.DataObject
) -> None:
    stream = " ".join(words)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=30))
    whole = run(config, [stream])
    check_segments(stream, whole, config)
    assert run(config, split_at(stream, cuts)) == whole


SHORT_TEXTS = ["Hi. Dr. X ok", "a, b. C d!e ", "etc. The—U.", "1. A\n\nb? c"]


@pytest.mark.parametrize("text", SHORT_TEXTS)
def test_every_cut_set_of_short_texts(text: str) -> None:
    configs = [SENTENCE, ChunkingConfig(), CONFIGS[5], CONFIGS[8]]
    expected = {id(config): run(config, [text]) for config in configs}
    inner = range(1, len(text))
    for mask in range(1 << len(inner)):
        cuts = [cut for bit, cut in enumerate(inner) if mask >> bit & 1]
        pieces = split_at(text, cuts)
        for config in configs:
            assert run(config, pieces) == expected[id(config)], pieces


def test_every_one_and_two_cut_split_with_hard_cuts() -> None:
    text = "abcdefghijklmnopqrstuvwxy z, Quiet ending here."
    config = ChunkingConfig(strategy=Strategy.SENTENCE, max_chars=20)
    expected = run(config, [text])
    assert ends(expected) == [SegmentEnd.CUT, SegmentEnd.CLAUSE, SegmentEnd.FLUSH]
    for first, second in itertools.combinations_with_replacement(range(len(text) + 1), 2):
        assert run(config, split_at(text, [first, second])) == expected


def test_invariant_holds_across_multiple_turns() -> None:
    text = "Hello there, friend. How are you doing today? Fine. " * 3

    def turns(pieces: list[str]) -> list[Segment]:
        buffer = TextBuffer(ChunkingConfig(max_chars=30))
        out: list[Segment] = []
        for piece in pieces:
            out.extend(buffer.feed(piece))
            if piece.endswith("?"):
                out.extend(buffer.flush())
        return out + buffer.flush()

    *questions, tail = text.split("?")
    by_sentence = [question + "?" for question in questions] + [tail]
    by_char = [char for piece in by_sentence for char in piece]
    assert turns(by_char) == turns(by_sentence)
    assert sum(s.turn_first for s in turns(by_sentence)) == 4


# --- performance ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        SENTENCE,
        ChunkingConfig(),
        ChunkingConfig(strategy=Strategy.WORD),
        ChunkingConfig(strategy=Strategy.SENTENCE, max_chars=5000),
    ],
    ids=["sentence", "adaptive", "word", "huge-cap"],
)
def test_char_by_char_feeding_is_linear(config: ChunkingConfig) -> None:
    unit = "The quick brown fox, who was 3.5 years old, met Dr. Smith at 3 p.m. today! Why? "
    stream = (unit * (20_000 // len(unit) + 1))[:20_000]
    began = time.perf_counter()
    by_char = run(config, list(stream))
    elapsed = time.perf_counter() - began
    assert by_char == run(config, [stream])
    check_segments(stream, by_char, config)
    assert elapsed < 5.0


def test_long_whitespace_and_long_words_stay_fast() -> None:
    config = ChunkingConfig(strategy=Strategy.SENTENCE, max_chars=100)
    stream = "Start." + " " * 20_000 + "Go " + "w" * 20_000 + " end."
    began = time.perf_counter()
    by_char = run(config, list(stream))
    elapsed = time.perf_counter() - began
    check_segments(stream, by_char, config)
    assert texts(by_char)[:2] == ["Start.", "Go"]
    assert len(by_char) == 2 + 200 + 1
    assert elapsed < 5.0


def test_first_clause_is_released_as_soon_as_its_space_arrives() -> None:
    buffer = TextBuffer(ChunkingConfig(lead_cost=None))
    assert buffer.feed("The quick brown fox jumps over the lazy dog while the orchestra,") == []
    (segment,) = buffer.feed(" ")
    assert segment.text == "The quick brown fox jumps over the lazy dog while the orchestra,"
    assert segment.boundary is SegmentEnd.CLAUSE


def test_segment_text_cuts_a_whole_text_as_a_buffer_fed_it_at_once() -> None:
    text = (
        "The quick brown fox jumps over the lazy dog while the orchestra, tuning its "
        "instruments in the distance, prepares for a long evening. Then it plays."
    )
    segments = segment_text(text, ChunkingConfig())
    assert len(segments) >= 2 and len(segments[0].text) < len(text) / 2
    assert [s.text for s in segment_text(text, ChunkingConfig(strategy=Strategy.SENTENCE))] == [
        text[: text.index(" Then")],
        "Then it plays.",
    ]
