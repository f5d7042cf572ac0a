"""Tests for the TextBuffer's bounded first segment (leads), the look-ahead and turn restarts."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.buffer_runs import check_segments, run, split_at, texts
from voxflow.text.buffer import TextBuffer
from voxflow.text.chunking import (
    AUTO_MODE_LOOKAHEAD_S,
    DEFAULT_LEAD_COST,
    ChunkingConfig,
    Segment,
    SegmentEnd,
    Strategy,
)
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


# --- hurry: a lead cut mid-turn -----------------------------------------------------------------

# A short opener, then a sentence whose first words arrive while the opener plays. The rest of
# that sentence is short: shorter than the schedule's 60-character minimum for later segments.
OPENER = "Sure thing!"
ARRIVED = " The refund went back to your"
REST = " card. It usually shows up within a few days. Is there anything"


def _mid_turn(config: ChunkingConfig | None = None, arrived: str = ARRIVED) -> TextBuffer:
    """A buffer that has emitted the opener and holds the start of the next sentence."""
    buffer = TextBuffer(config or ChunkingConfig())
    assert buffer.feed(OPENER, now=0.0) == []
    [opener] = buffer.poll(1.0)  # the look-ahead: whatever the schedule's minimum
    assert opener.text == OPENER and not opener.lead
    assert buffer.feed(arrived, now=1.0) == []
    return buffer


def test_hurry_cuts_a_lead_from_the_arrived_text_at_a_phrase_boundary() -> None:
    buffer = _mid_turn()
    assert buffer.can_hurry
    [lead] = buffer.hurry()
    # "to" opens a phrase, and the text before it costs 20: inside the window (18, 32).
    assert lead == Segment("The refund went back", 12, 32, SegmentEnd.WORD, 1, False, lead=True)
    low, high = DEFAULT_LEAD_COST
    assert low <= spoken_cost(lead.text) <= high


def test_the_segment_after_a_hurried_lead_ends_at_its_sentence_end_however_short() -> None:
    buffer = _mid_turn()
    buffer.hurry()
    [takeover] = buffer.feed(REST, now=1.1)
    # 13 characters, far below the minimum of 60 that would otherwise merge the next sentence.
    assert takeover == Segment("to your card.", 33, 46, SegmentEnd.SENTENCE, 2, False)
    # After it, the schedule is back: the next short sentence waits to be merged.
    assert texts(buffer.flush()) == ["It usually shows up within a few days. Is there anything"]
    # Without the hurry, the same text merges the short sentences as the schedule says.
    segments = run(ChunkingConfig(), [OPENER + ARRIVED + REST])
    assert (
        texts(segments)[1]
        == "The refund went back to your card. It usually shows up within a few days."
    )
    assert not any(s.lead for s in segments)


def test_hurry_without_a_phrase_boundary_cuts_at_the_last_word_boundary_in_the_window() -> None:
    buffer = _mid_turn(arrived=" Tomorrow it will be cloudy everywhere with")
    [lead] = buffer.hurry()
    # Boundaries cost 8, 11, 16, 19, 26, 37: 26 is the last inside (18, 32); "with" is past it.
    assert lead.text == "Tomorrow it will be cloudy" and lead.lead
    assert lead.boundary is SegmentEnd.WORD and lead.index == 1


def test_a_hurry_before_enough_text_arrived_cuts_the_lead_as_the_text_arrives() -> None:
    buffer = _mid_turn(arrived=" The refund")
    assert buffer.hurry() == []  # "The refund" costs 10: below the window
    assert not buffer.can_hurry  # hurried already: a second hurry changes nothing
    assert buffer.hurry() == []
    assert buffer.feed(" went", now=1.1) == []
    assert buffer.feed(" back to", now=1.2) == []  # "to" may be the start of "today"
    [lead] = buffer.feed(" your", now=1.3)
    assert (lead.text, lead.lead, lead.index) == ("The refund went back", True, 1)
    [takeover] = buffer.feed(REST, now=1.4)
    assert (takeover.text, takeover.boundary) == ("to your card.", SegmentEnd.SENTENCE)


@pytest.mark.parametrize(
    "config",
    [ChunkingConfig(strategy=Strategy.SENTENCE), ChunkingConfig(lead_cost=None)],
    ids=["sentence", "no-lead-cost"],
)
def test_no_hurry_without_a_lead_window(config: ChunkingConfig) -> None:
    buffer = _mid_turn(config)
    assert buffer.has_content and not buffer.can_hurry
    assert buffer.hurry() == []
    segments = buffer.feed(REST, now=1.1) + buffer.flush()
    assert not any(s.lead for s in segments)


def test_no_hurry_with_nothing_buffered() -> None:
    buffer = TextBuffer(ChunkingConfig())
    assert not buffer.can_hurry and buffer.hurry() == []
    buffer.feed(OPENER + " ", now=0.0)
    [opener] = buffer.poll(1.0)  # the look-ahead confirmed it: only a space is left
    assert opener.text == OPENER
    assert not buffer.can_hurry and buffer.hurry() == []
    buffer.feed(ARRIVED, now=2.0)
    assert buffer.can_hurry
    buffer.flush()
    assert not buffer.can_hurry


def test_no_hurry_while_a_leads_sentence_is_unfinished() -> None:
    buffer = _mid_turn()
    buffer.hurry()
    buffer.feed(" card and then some more words that go on", now=1.1)
    assert buffer.has_content and not buffer.can_hurry  # the takeover's text is arriving
    assert buffer.hurry() == []
    [takeover] = buffer.feed(" for a while. Then", now=1.2)
    assert takeover.boundary is SegmentEnd.SENTENCE and not takeover.lead
    assert buffer.can_hurry  # the sentence is done: the next one may be hurried


def test_without_takeovers_the_rest_of_a_leads_sentence_may_be_hurried() -> None:
    # Kokoro says the rest of a lead's sentence as a piece of its own: when the LLM pauses in
    # it, the arrived words are cut as a lead again rather than waiting for the sentence end.
    buffer = TextBuffer(ChunkingConfig(), takeovers=False)
    [lead] = buffer.feed(LONG_FIRST[:60], now=0.0)
    assert lead.lead and lead.turn_first
    assert buffer.has_content and buffer.can_hurry
    [hurried] = buffer.hurry()
    # "to" opens a phrase: the arrived words up to it, inside the lead window.
    assert hurried == Segment(
        "reschedule your appointment", 26, 53, SegmentEnd.WORD, 1, False, lead=True
    )
    low, high = DEFAULT_LEAD_COST
    assert low <= spoken_cost(hurried.text) <= high
    # The rest of the sentence ends at its end, as after any lead.
    [rest] = buffer.feed(LONG_FIRST[60:], now=0.1)
    assert rest.text == "to next Tuesday afternoon if that works better for you." and not rest.lead
    # The same buffer with takeovers waits for the sentence end, as above.
    waiting = TextBuffer(ChunkingConfig())
    waiting.feed(LONG_FIRST[:60], now=0.0)
    assert not waiting.can_hurry and waiting.hurry() == []


def test_no_hurry_while_a_first_leads_sentence_is_unfinished() -> None:
    buffer = TextBuffer(ChunkingConfig())
    [lead] = buffer.feed(LONG_FIRST[:60], now=0.0)
    assert lead.lead and lead.turn_first
    assert buffer.has_content and not buffer.can_hurry
    assert buffer.hurry() == []


HURRY_CONFIGS = [
    ChunkingConfig(),
    ChunkingConfig(auto_mode=True),
    ChunkingConfig(lead_cost=(5, 12), max_chars=40),
]


@settings(max_examples=150, deadline=None)
@given(
    config=st.sampled_from(HURRY_CONFIGS),
    words=st.lists(WORDS, min_size=1, max_size=25),
    data=st.data(),
)
def test_a_hurry_gives_the_same_segments_however_the_text_was_split(
    config: ChunkingConfig, words: list[str], data: st.DataObject
) -> None:
    stream = "Sure thing! " + " ".join(words)
    prefix = data.draw(st.integers(0, len(stream)), label="prefix")

    def hurried(before: list[str], after: list[str]) -> list[Segment]:
        buffer = TextBuffer(config)
        out: list[Segment] = []
        for piece in before:
            out.extend(buffer.feed(piece, now=0.0))
        out.extend(buffer.hurry())
        for piece in after:
            out.extend(buffer.feed(piece, now=0.0))
        return out + buffer.flush()

    whole = hurried([stream[:prefix]], [stream[prefix:]])
    assert "".join(s.text for s in whole).replace(" ", "") == stream.replace(" ", "")
    cuts_before = data.draw(st.lists(st.integers(0, prefix), max_size=10), label="before")
    cuts_after = data.draw(st.lists(st.integers(prefix, len(stream)), max_size=10), label="after")
    pieces_before = split_at(stream[:prefix], cuts_before)
    pieces_after = split_at(stream, [prefix, *cuts_after])[1:]
    assert hurried(pieces_before, pieces_after) == whole
