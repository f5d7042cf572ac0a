"""The calls benchmark's scripts (``voxflow_bench.calls.plan``): seeded, token schedules as an
LLM streams them, the shares of barge-ins and pauses, and lockstep starts."""

from __future__ import annotations

import itertools
import statistics

import pytest

from voxflow_bench.calls.plan import CallPattern, CallScript, TurnPlan, snap
from voxflow_bench.corpus import Reply, load_corpus
from voxflow_bench.tokens import llm_tokens

_PUNCTUATION = (".", "!", "?", ",", ";", ":")
REPLIES = load_corpus(bundled="calls.tsv")


def _ends_a_word_with_punctuation(tokens: list[str], index: int) -> bool:
    """Token ``index`` ends in punctuation and a space follows it: a clause mark, not the colon
    of 6:15 or the point of 2.5."""
    spaced = tokens[index][-1:].isspace() or tokens[index + 1][:1].isspace()
    return tokens[index].rstrip().endswith(_PUNCTUATION) and spaced


# Replies with somewhere for an LLM pause to go (a clause mark before the last token); the
# corpus's long comma-less replies and one-word acknowledgements have none.
def _pausable(reply: Reply) -> bool:
    tokens = llm_tokens(reply.text)
    return any(_ends_a_word_with_punctuation(tokens, i) for i in range(len(tokens) - 1))


PAUSABLE = tuple(r for r in REPLIES if _pausable(r))
# Float sums of token intervals: a little slack where a bound is exact in real numbers.
_SLACK_S = 1e-9


def _turns(pattern: CallPattern, replies: tuple[Reply, ...], count: int) -> list[TurnPlan]:
    """``count`` turns from as many calls as needed, 100 turns a call."""
    turns: list[TurnPlan] = []
    for index in itertools.count():
        script = CallScript(index, pattern, replies)
        turns += [script.next_turn() for _ in range(min(100, count - len(turns)))]
        if len(turns) == count:
            return turns
    raise AssertionError("unreachable")


def _intervals(plan: TurnPlan) -> list[float]:
    times = [token.at_s for token in plan.tokens]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def test_a_call_is_the_same_for_the_same_index_and_differs_across_indexes() -> None:
    pattern = CallPattern(burstiness=0.5)

    def script_of(index: int) -> tuple[float, list[TurnPlan], list[float]]:
        script = CallScript(index, pattern, REPLIES)
        turns, starts = [], []
        for ready_s in (0.0, 3.3, 7.1, 11.9, 15.0):
            turns.append(script.next_turn())
            starts.append(script.start_at(ready_s))
        return script.first_turn_s, turns, starts

    assert script_of(3) == script_of(3)
    assert script_of(3) != script_of(4)
    # Different calls speak different replies, not just at other times.
    replies_of = [[t.reply.name for t in script_of(i)[1]] for i in range(4)]
    assert len({tuple(names) for names in replies_of}) == 4
    # The seed is part of the script too.
    other_seed = CallScript(3, CallPattern(burstiness=0.5, seed=2), REPLIES).next_turn()
    assert other_seed != CallScript(3, pattern, REPLIES).next_turn()


def test_a_call_needs_replies() -> None:
    with pytest.raises(ValueError):
        CallScript(0, CallPattern(), ())


def test_first_turns_spread_over_the_pattern_s_window() -> None:
    pattern = CallPattern(first_turn_spread_s=4.0)
    firsts = [CallScript(i, pattern, REPLIES).first_turn_s for i in range(200)]
    assert all(0.0 <= first <= 4.0 for first in firsts)
    assert len(set(firsts)) == 200
    # Spread over the window, not bunched at one end.
    assert min(firsts) < 1.0 and max(firsts) > 3.0
    assert all(
        CallScript(i, CallPattern(first_turn_spread_s=0), REPLIES).first_turn_s == 0.0
        for i in range(5)
    )


def test_tokens_rebuild_the_reply_on_a_schedule_from_zero() -> None:
    for plan in _turns(CallPattern(), REPLIES, 500):
        assert "".join(token.text for token in plan.tokens) == plan.text
        assert all(token.text for token in plan.tokens)
        assert plan.tokens[0].at_s == 0.0
        assert all(gap > 0 for gap in _intervals(plan))


def test_token_intervals_average_one_over_the_rate_within_the_jitter() -> None:
    pattern = CallPattern(token_rate=40.0, token_jitter=0.5, llm_pause_share=0.0)
    intervals = [gap for plan in _turns(pattern, REPLIES, 300) for gap in _intervals(plan)]
    low, high = 0.5 / 40.0, 1.5 / 40.0
    assert all(low - _SLACK_S <= gap <= high + _SLACK_S for gap in intervals)
    # Thousands of uniform draws: their mean is within a few percent of the rate's interval.
    assert statistics.fmean(intervals) == pytest.approx(1 / 40.0, rel=0.03)
    # And they do vary: the jitter is applied.
    assert max(intervals) - min(intervals) > 0.5 * (high - low)


def test_no_jitter_is_the_rate_exactly() -> None:
    pattern = CallPattern(token_rate=25.0, token_jitter=0.0, llm_pause_share=0.0)
    for plan in _turns(pattern, REPLIES, 20):
        assert _intervals(plan) == pytest.approx([1 / 25.0] * (len(plan.tokens) - 1))


def test_a_pause_is_one_long_gap_after_punctuation() -> None:
    pattern = CallPattern(llm_pause_share=1.0, llm_pause_s=(0.2, 0.8), token_jitter=0.5)
    paused = 0
    for plan in _turns(pattern, PAUSABLE, 400):
        assert plan.llm_pause_s > 0, "every reply here has a place for the pause"
        paused += 1
        assert 0.2 <= plan.llm_pause_s <= 0.8
        intervals = _intervals(plan)
        long_gaps = [i for i, gap in enumerate(intervals) if gap >= plan.llm_pause_s]
        # The gap after token i is intervals[i]: exactly one, after the token the plan names.
        assert long_gaps == [plan.pause_after]
        assert intervals[plan.pause_after] >= plan.llm_pause_s + 0.5 / pattern.token_rate - _SLACK_S
        texts = [token.text for token in plan.tokens]
        assert _ends_a_word_with_punctuation(texts, plan.pause_after)
        assert plan.pause_after < len(plan.tokens) - 1  # never after the last token
    assert paused == 400


def test_a_mark_inside_a_word_is_no_place_for_a_pause() -> None:
    """A time's colon and a number's point are inside a word: an LLM pause there would count
    its wait as the server's first audio, with only half a number to speak."""
    replies = (
        Reply("time", "test", "Your alarm is set for 6:15 tomorrow morning"),
        Reply("number", "test", "It calls for 2.5 cups of milk"),
    )
    assert any(":" in t or "." in t for r in replies for t in llm_tokens(r.text)[:-1])
    for plan in _turns(CallPattern(llm_pause_share=1.0), replies, 100):
        assert (plan.llm_pause_s, plan.pause_after) == (0.0, -1)


def test_a_reply_without_punctuation_inside_never_pauses() -> None:
    unpausable = tuple(r for r in REPLIES if r not in PAUSABLE)
    assert unpausable, "the corpus has replies without a place for a pause"
    for plan in _turns(CallPattern(llm_pause_share=1.0), unpausable, 100):
        assert (plan.llm_pause_s, plan.pause_after) == (0.0, -1)


def test_turns_without_a_pause_point_nowhere() -> None:
    turns = _turns(CallPattern(llm_pause_share=0.3), REPLIES, 300)
    unpaused = [plan for plan in turns if plan.llm_pause_s == 0]
    assert unpaused and len(unpaused) < len(turns)
    assert all(plan.pause_after == -1 for plan in unpaused)
    assert all(plan.pause_after >= 0 for plan in turns if plan.llm_pause_s > 0)


def test_shares_and_ranges_follow_the_pattern() -> None:
    pattern = CallPattern(
        barge_in_share=0.2,
        barge_in_after_s=(0.8, 3.0),
        llm_pause_share=0.4,
        caller_speech_s=(1.5, 4.0),
    )
    turns = _turns(pattern, PAUSABLE, 2000)
    barged = [plan.barge_in_after_s for plan in turns if plan.barge_in_after_s is not None]
    paused = [plan for plan in turns if plan.llm_pause_s > 0]
    # 2000 draws: a binomial share's standard deviation is under 0.011; 0.05 is over 4 of them.
    assert len(barged) / len(turns) == pytest.approx(0.2, abs=0.05)
    assert len(paused) / len(turns) == pytest.approx(0.4, abs=0.05)
    assert all(0.8 <= after <= 3.0 for after in barged)
    assert all(1.5 <= plan.caller_speech_s <= 4.0 for plan in turns)
    # Every reply is spoken now and then.
    assert {plan.reply.name for plan in turns} == {reply.name for reply in PAUSABLE}


def test_zero_shares_mean_never() -> None:
    pattern = CallPattern(barge_in_share=0.0, llm_pause_share=0.0)
    for plan in _turns(pattern, REPLIES, 300):
        assert plan.barge_in_after_s is None
        assert (plan.llm_pause_s, plan.pause_after) == (0.0, -1)


@pytest.mark.parametrize(
    ("at_s", "period_s", "snapped"),
    [(0.0, 2.0, 0.0), (0.1, 2.0, 2.0), (2.0, 2.0, 2.0), (3.99, 2.0, 4.0), (4.2, 1.5, 4.5)],
)
def test_snap_is_the_next_shared_instant(at_s: float, period_s: float, snapped: float) -> None:
    assert snap(at_s, period_s) == pytest.approx(snapped)


def test_full_burstiness_starts_every_turn_on_a_shared_instant() -> None:
    pattern = CallPattern(burstiness=1.0, burst_period_s=2.0)
    script = CallScript(0, pattern, REPLIES)
    readies = [0.37 * k for k in range(60)]
    for ready_s in readies:
        start_s = script.start_at(ready_s)
        assert ready_s - _SLACK_S <= start_s < ready_s + 2.0
        periods = start_s / 2.0
        assert periods == pytest.approx(round(periods), abs=1e-9)


def test_no_burstiness_starts_every_turn_when_ready() -> None:
    script = CallScript(0, CallPattern(burstiness=0.0), REPLIES)
    for ready_s in (0.0, 0.37, 1.99, 2.0, 13.7):
        assert script.start_at(ready_s) == ready_s


def test_half_burstiness_snaps_some_turns_only() -> None:
    script = CallScript(0, CallPattern(burstiness=0.5, burst_period_s=2.0), REPLIES)
    # Ready times never on a shared instant: a start that moved was snapped.
    readies = [2.0 * k + 0.5 for k in range(400)]
    moved = sum(1 for ready_s in readies if script.start_at(ready_s) != ready_s)
    assert moved / len(readies) == pytest.approx(0.5, abs=0.1)


@pytest.mark.parametrize(
    "bad",
    [
        {"token_rate": 0.0},
        {"token_rate": -5.0},
        {"token_jitter": 1.0},
        {"token_jitter": -0.1},
        {"barge_in_share": -0.1},
        {"barge_in_share": 1.5},
        {"llm_pause_share": -0.01},
        {"llm_pause_share": 2.0},
        {"burstiness": 1.01},
        {"burstiness": -1.0},
        {"caller_speech_s": (4.0, 1.5)},
        {"caller_speech_s": (-1.0, 1.0)},
        {"barge_in_after_s": (3.0, 0.8)},
        {"llm_pause_s": (0.8, 0.2)},
        {"burst_period_s": 0.0},
        {"first_turn_spread_s": -1.0},
    ],
)
def test_pattern_rejects_bad_values(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CallPattern(**bad)  # type: ignore[arg-type]


def test_pattern_accepts_edge_values_and_lists_them() -> None:
    pattern = CallPattern(
        barge_in_share=1.0,
        llm_pause_share=0.0,
        burstiness=1.0,
        caller_speech_s=(0.0, 0.0),
        first_turn_spread_s=0.0,
    )
    settings = pattern.as_dict()
    assert settings["caller_speech_s"] == [0.0, 0.0]
    assert settings["barge_in_share"] == 1.0 and settings["burstiness"] == 1.0
    assert set(settings) == {
        "token_rate",
        "token_jitter",
        "caller_speech_s",
        "barge_in_share",
        "barge_in_after_s",
        "llm_pause_share",
        "llm_pause_s",
        "burstiness",
        "burst_period_s",
        "first_turn_spread_s",
        "seed",
    }
