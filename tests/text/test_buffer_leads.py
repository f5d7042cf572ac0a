"""Tests for the TextBuffer's bounded first segment (leads), the look-ahead and turn restarts."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.text.test_buffer import check_segments, run, split_at, texts
from voxflow.text.buffer import ChunkingConfig, Segment, SegmentEnd, Strategy, TextBuffer
from voxflow.text.chunking import AUTO_MODE_LOOKAHEAD_S, DEFAULT_LEAD_COST
from voxflow.text.phrases import spoken_cost
from voxflow.text.segment import find_boundaries

LONG_FIRST = (
    "I can definitely help you reschedule your appointment to next Tuesday afternoon if that "
    "works better for you. Would you like the morning slot?"
)


# --- where the first segment is cut -------------------------------------------------------------


def test_a_long_first_sentence_is_cut_within_the_lead_window() -> None:
    segments = run(ChunkingConfig(), [LONG_FIRST])
    first = segments[0]
    assert first.lead and first.boundary is SegmentEnd.WORD
    low, high = DEFAULT_LEAD_COST
    assert low <= spoken_cost(first.text) <= high
    # The sentence goes on in the next segment, which ends it.
    assert segments[1].text.endswith("better for you.")
    assert not segments[1].lead


def test_the_cut_goes_before_a_word_that_opens_a_phrase() -> None:
    config = ChunkingConfig(lead_cost=(10, 40))
    [first, *_] = run(config, ["Thanks so much for waiting while I checked your order today."])
    # "for" opens a phrase and the text before it costs 14.
    assert first.text == "Thanks so much"
    [first, *_] = run(config, ["Your total comes to forty two dollars and ten cents in all."])
    assert first.text == "Your total comes"


def test_without_a_phrase_start_the_cut_is_the_last_word_boundary_in_the_window() -> None:
    config = ChunkingConfig(lead_cost=(5, 20))
    text = "Everything seems perfectly normal here today friend."
    [first, *_] = run(config, [text])
    # Boundaries cost 10, 16, 26...: 16 is the last inside the window.
    assert first.text == "Everything seems"
    assert first.lead


def test_a_clause_inside_the_window_ends_the_first_segment_in_auto_mode() -> None:
    config = ChunkingConfig(auto_mode=True)
    [first, second] = run(config, ["Okay, so here is the thing, we can move it to Friday."])
    assert first.text == "Okay, so here is the thing,"
    assert first.boundary is SegmentEnd.CLAUSE and first.lead
    assert second.boundary is SegmentEnd.FLUSH


def test_a_short_first_sentence_is_its_own_segment_and_no_lead() -> None:
    segments = run(ChunkingConfig(), ["Sure! " + LONG_FIRST])
    assert segments[0] == Segment("Sure!", 0, 5, SegmentEnd.SENTENCE, 0, True, lead=False)
    # The next segment is not a first segment: it is a whole sentence, however long.
    assert segments[1].text.startswith("I can definitely") and segments[1].text.endswith("you.")


def test_digits_cost_more_than_letters() -> None:
    config = ChunkingConfig(lead_cost=(10, 30))
    [first, *_] = run(config, ["Call 555 123 4567 or 555 987 6543 and ask for the billing desk."])
    assert spoken_cost(first.text) <= 30
    assert len(first.text) < 15


def test_only_adaptive_and_auto_mode_cut_early() -> None:
    for config in (ChunkingConfig(strategy=Strategy.SENTENCE), ChunkingConfig(lead_cost=None)):
        segments = run(config, [LONG_FIRST])
        assert not any(s.lead for s in segments)
        assert segments[0].text.endswith("better for you."), config
    for strategy in (Strategy.FIXED, Strategy.WORD):
        assert not any(s.lead for s in run(ChunkingConfig(strategy=strategy), [LONG_FIRST]))


def test_later_turns_are_cut_early_too() -> None:
    buffer = TextBuffer(ChunkingConfig())
    buffer.feed(LONG_FIRST, now=0.0)
    buffer.flush()
    [first, *_] = buffer.feed(" " + LONG_FIRST, now=1.0)
    assert first.lead and first.turn_first


def test_a_first_word_dearer_than_the_window_ends_the_first_segment() -> None:
    [first, *_] = run(ChunkingConfig(), ["For a $350,000 loan at 6.25% over thirty years, fine."])
    assert first.text == "For a $350,000" and first.lead


def test_the_lead_is_final_once_the_text_after_it_costs_too_much() -> None:
    buffer = TextBuffer(ChunkingConfig(lead_cost=(10, 30)))
    assert buffer.feed("Your confirmation number is", now=0.0) == []
    # The number is not complete, but whatever it is, it ends past the window.
    [lead] = buffer.feed(" ZX48-99", now=0.0)
    assert lead.text == "Your confirmation number is"


def test_lead_is_decided_as_soon_as_the_word_after_it_is_complete() -> None:
    config = ChunkingConfig(lead_cost=(10, 40))
    buffer = TextBuffer(config)
    assert buffer.feed("Thanks so much for", now=0.0) == []  # "for" may be "fortunately"
    [lead] = buffer.feed(" w", now=0.0)
    assert lead.text == "Thanks so much"


def first_bound_holds(stream: str, segments: list[Segment], config: ChunkingConfig) -> None:
    """The first segment ends at or before the first word boundary costing more than ``high``
    when an earlier boundary costs at least ``low``."""
    assert config.leads is not None
    low, high = config.leads
    first = segments[0]
    start = first.start
    boundaries = [b for b in find_boundaries(stream, final=False) if b.pos > start]
    costs = [(b.pos, spoken_cost(stream[start : b.pos])) for b in boundaries]
    over = next((pos for pos, cost in costs if cost > high), None)
    inside = any(low <= cost <= high for pos, cost in costs if over is None or pos < over)
    if over is not None:
        assert first.end <= over, (first, over)
        if inside:
            assert first.end < over, (first, over)


WORDS = st.sampled_from(
    [
        "I", "can", "definitely", "help", "you", "with", "that", "appointment", "to", "and",
        "because", "reschedule", "Tuesday", "$45.99", "555-0199", "3:30", "Dr.", "p.m.", "it,",
        "now.", "really?", "well—", "supercalifragilistic", "x" * 30, "12345678",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(words=st.lists(WORDS, min_size=1, max_size=40), data=st.data())
def test_first_segment_cost_is_bounded_for_any_text(words: list[str], data: st.DataObject) -> None:
    stream = " ".join(words)
    for config in (ChunkingConfig(), ChunkingConfig(auto_mode=True)):
        whole = run(config, [stream])
        check_segments(stream, whole, config)
        first_bound_holds(stream, whole, config)
        cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20))
        assert run(config, split_at(stream, cuts)) == whole


# --- look-ahead ---------------------------------------------------------------------------------


def test_a_finished_sentence_is_spoken_after_the_lookahead() -> None:
    buffer = TextBuffer(ChunkingConfig(strategy=Strategy.SENTENCE, lookahead_s=0.15))
    assert buffer.feed("How can I help?", now=10.0) == []
    assert buffer.idle_deadline() == pytest.approx(10.15)
    assert buffer.poll(10.14) == []
    [segment] = buffer.poll(10.15)
    assert segment == Segment("How can I help?", 0, 15, SegmentEnd.SENTENCE, 0, True)
    assert buffer.idle_deadline() is None
    # The turn goes on: the next sentence is the turn's second segment.
    [after] = buffer.feed(" I can. Yes", now=11.0)
    assert (after.text, after.index) == ("I can.", 1)


def test_lookahead_ignores_the_minimum_of_later_segments() -> None:
    buffer = TextBuffer(ChunkingConfig())
    [first] = buffer.feed("Sure. Let me look.", now=0.0)
    assert first.text == "Sure."
    assert buffer.poll(0.1) == []
    [second] = buffer.poll(0.2)
    assert (second.text, second.boundary, second.index) == ("Let me look.", SegmentEnd.SENTENCE, 1)


@pytest.mark.parametrize(
    "text", ["We met Dr.", "Call me, e.g.", "It was written by J.", "Hello there", "Wait,"]
)
def test_lookahead_never_cuts_what_is_not_a_sentence_end(text: str) -> None:
    buffer = TextBuffer(ChunkingConfig(auto_mode=True, lead_cost=None))
    buffer.feed(text, now=0.0)
    assert buffer.idle_deadline() is None
    assert buffer.poll(100.0) == []
    assert buffer.buffered == text


def test_a_decimal_that_arrives_within_the_lookahead_is_not_split() -> None:
    buffer = TextBuffer(ChunkingConfig(strategy=Strategy.SENTENCE, lookahead_s=0.15))
    assert buffer.feed("It costs 3.", now=0.0) == []
    assert buffer.poll(0.1) == []
    segments = buffer.feed("50 in all. Then", now=0.1)
    assert " ".join(texts(segments)) == "It costs 3.50 in all."
    assert segments[-1].boundary is SegmentEnd.SENTENCE


def test_a_number_ending_the_reply_is_a_sentence_end_after_the_lookahead() -> None:
    buffer = TextBuffer(ChunkingConfig(strategy=Strategy.SENTENCE, lookahead_s=0.15))
    buffer.feed("Your total is 42.", now=0.0)
    assert texts(buffer.poll(0.2)) == ["Your total is 42."]


def test_whitespace_after_the_sentence_does_not_restart_the_lookahead_clock_wrongly() -> None:
    buffer = TextBuffer(ChunkingConfig(strategy=Strategy.SENTENCE, lookahead_s=0.15))
    buffer.feed("Done!", now=0.0)
    buffer.feed(" ", now=0.1)
    assert buffer.idle_deadline() == pytest.approx(0.25)
    assert texts(buffer.poll(0.25)) == ["Done!"]


def test_auto_mode_takes_a_sentence_that_ends_a_message_almost_at_once() -> None:
    # The client promised whole sentences per message: no LLM token gap to wait out.
    config = ChunkingConfig(auto_mode=True, lookahead_s=0.15)
    assert config.effective_lookahead_s == AUTO_MODE_LOOKAHEAD_S < 0.15
    buffer = TextBuffer(config)
    assert buffer.feed("Hi!", now=0.0) == []
    assert buffer.idle_deadline() == pytest.approx(AUTO_MODE_LOOKAHEAD_S)
    assert texts(buffer.poll(AUTO_MODE_LOOKAHEAD_S)) == ["Hi!"]
    # What refutes a sentence end still does, in auto mode too.
    buffer = TextBuffer(config)
    buffer.feed("We met Dr.", now=0.0)
    assert buffer.poll(1.0) == []
    # Outside auto mode the look-ahead is the one configured.
    assert ChunkingConfig(lookahead_s=0.15).effective_lookahead_s == 0.15


def test_lookahead_can_be_turned_off() -> None:
    buffer = TextBuffer(ChunkingConfig(auto_mode=True, lookahead_s=None))
    buffer.feed("How can I help?", now=0.0)
    assert buffer.idle_deadline() is None
    assert buffer.poll(100.0) == []


def test_lookahead_and_idle_flush_share_the_deadline() -> None:
    buffer = TextBuffer(
        ChunkingConfig(strategy=Strategy.SENTENCE, idle_flush_s=1.0, lookahead_s=0.15)
    )
    buffer.feed("Half a sentence", now=0.0)
    assert buffer.idle_deadline() == pytest.approx(1.0)
    buffer.feed(" ends here.", now=0.5)
    assert buffer.idle_deadline() == pytest.approx(0.65)


# --- turns --------------------------------------------------------------------------------------


def test_restart_turn_makes_the_next_segment_a_first_segment() -> None:
    buffer = TextBuffer(ChunkingConfig())
    [first] = buffer.feed("Sure. Let me check that for you right now.", now=0.0)
    buffer.restart_turn()  # text is buffered: nothing changes
    [second] = buffer.poll(1.0)
    assert (first.index, second.index) == (0, 1)
    buffer.restart_turn()
    [lead, *_] = buffer.feed(" " + LONG_FIRST, now=5.0)
    assert lead.turn_first and lead.lead
