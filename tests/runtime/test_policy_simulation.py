"""Many calls on a fake clock (``tests.support.simulation``): the sessions and the scheduling
policy, jobs at the bundled voice's measured costs on two cores. What the listeners hear is the
test."""

from __future__ import annotations

import random

import pytest

from tests.support.simulation import SimCosts, SimEngine, Simulation, Turn, TurnHeard
from tests.support.traffic import corpus_texts
from voxflow.runtime.scheduler_settings import SchedulerSettings
from voxflow.session.context import DEFAULT_HURRY_MARGIN_S
from voxflow.session.options import SessionConfig

MAX_QUIET_S = SchedulerSettings().max_quiet_s or 0.0

# Replies that open with a short sentence while the next one, long and comma-free, is still
# streaming: the opener's audio runs out before that sentence has arrived.
OPENERS = (
    "Sure! Tomorrow in Seattle it will be cloudy in the morning with a high of 58 degrees and "
    "there is a sixty percent chance of rain after three in the afternoon.",
    "Okay. The refund of $86.40 went back to the card you paid with this morning and it usually "
    "shows up within three to five business days depending on your bank.",
    "I see. That error usually means the router lost its connection to the modem so let us try "
    "unplugging the modem for thirty seconds and then plugging it back in.",
)


def _config(hurry: float | None = DEFAULT_HURRY_MARGIN_S) -> SessionConfig:
    return SessionConfig(default_voice="sim", default_format="pcm_22050", hurry_margin_s=hurry)


def _calls(
    sim: Simulation,
    texts: list[str],
    calls: int,
    seed: int,
    turns: int = 3,
    sentences: bool = False,
) -> None:
    """``calls`` calls whose first turns start within 4 s of each other; the caller speaks 2
    to 5 s after each reply (its audio lasts about a second per 14 characters). ``sentences``:
    the replies come a sentence a message, each flushed (``Turn.sentences``)."""
    rng = random.Random(seed)
    for _ in range(calls):
        at = rng.uniform(0.0, 4.0)
        plan = []
        for _ in range(turns):
            text = texts[rng.randrange(len(texts))]
            plan.append(Turn(text, at, sentences=sentences))
            at += len(text) / 14.0 + rng.uniform(2.0, 5.0)
        sim.add_call(plan)


def _gapped(turns: list[TurnHeard]) -> list[TurnHeard]:
    return [t for t in turns if t.gaps]


@pytest.mark.parametrize("text", OPENERS)
def test_one_call_runs_dry_after_an_opener_without_a_lead_mid_turn(text: str) -> None:
    sim = Simulation(config=_config(hurry=None))
    sim.add_call([Turn(text, 0.0)])
    (turn,) = sim.run()
    assert turn.done and turn.gaps >= 1
    assert turn.player.longest_underrun_ms > 100


@pytest.mark.parametrize("text", OPENERS)
def test_a_lead_cut_mid_turn_keeps_one_call_gapless_after_an_opener(text: str) -> None:
    sim = Simulation(config=_config())
    sim.add_call([Turn(text, 0.0)])
    (turn,) = sim.run()
    assert turn.done and not turn.errors
    assert turn.gaps == 0
    assert turn.ttfa_ms is not None and turn.ttfa_ms < 300


@pytest.mark.parametrize("calls", [2, 4, 8])
def test_up_to_eight_calls_on_two_cores_hear_no_gap(calls: int) -> None:
    replies = corpus_texts("calls.tsv")
    sim = Simulation(config=_config())
    _calls(sim, replies, calls, seed=calls)
    turns = sim.run()
    assert len(turns) == 3 * calls and all(t.done for t in turns)
    assert _gapped(turns) == []


def test_the_same_calls_without_mid_turn_leads_have_gaps() -> None:
    replies = corpus_texts("calls.tsv")
    with_leads, without = Simulation(config=_config()), Simulation(config=_config(hurry=None))
    for sim in (with_leads, without):
        _calls(sim, replies, 4, seed=4, turns=4)
    assert _gapped(with_leads.run()) == []
    assert len(_gapped(without.run())) >= 2


def test_an_overloaded_machine_shows_up_as_gaps() -> None:
    # The simulation can fail: the same calls on a third of the machine run dry.
    replies = corpus_texts("calls.tsv")
    sim = Simulation(config=_config(), costs=SimCosts(render_per_frame_s=0.0027))
    _calls(sim, replies, 8, seed=8)
    turns = sim.run()
    assert len(_gapped(turns)) > len(turns) // 2


def test_a_barged_in_turn_stops_and_the_next_one_is_heard_whole() -> None:
    sim = Simulation(config=_config())
    sim.add_call([Turn(OPENERS[0], 0.0, barge_in_after_s=1.0), Turn(OPENERS[1], 4.0)])
    barged, second = sim.run()
    assert barged.done and not barged.errors
    assert barged.player.received_ms < 4000  # the rest of a 9 s reply never came
    assert second.done and second.gaps == 0


# Replies whose first sentences hold seconds of audio before the next one is rendered: what a
# framework that ends a quiet context (Pipecat, after 3 s) must hear whole.
LONG_REPLIES = (
    "Sure thing! I have looked at the booking system and the earliest table that is free for "
    "four people this weekend is on Saturday at seven thirty in the evening near the window and "
    "they can also hold it until eight if you are running late. Would you like me to book it?",
    "Okay. Your order of 3 items shipped on Tuesday from the warehouse in Denver and the carrier "
    "expects to deliver it to the front desk of your building by Friday afternoon. Anything "
    "else? I can also set up a text message for when it arrives.",
)


def _rendering_s(text: str) -> float:
    """What rendering ``text`` whole takes on one core of the simulated machine."""
    costs, engine = SimCosts(), SimEngine()
    return costs.prepare_s(len(text)) + costs.render_s(engine.utterance(text).num_frames)


@pytest.mark.parametrize("text", LONG_REPLIES)
@pytest.mark.parametrize("sentences", [True, False], ids=["sentences", "tokens"])
def test_one_calls_reply_is_all_out_within_a_rendering_of_its_last_text(
    text: str, sentences: bool
) -> None:
    # Its last sentence is due long after its text arrived (seconds of audio before it), but
    # the worker is free: it is rendered then, not when its listener would need it.
    sim = Simulation(config=_config())
    sim.add_call([Turn(text, 0.0, sentences=sentences)])
    (turn,) = sim.run()
    assert turn.done and not turn.errors
    # A sentence at a time, the opener has played out before the next sentence arrives whole.
    assert sentences or turn.gaps == 0
    assert turn.last_text_at is not None and turn.last_audio_at is not None
    assert turn.last_audio_at - turn.last_text_at < _rendering_s(text)
    assert turn.player.stats().finish_at - turn.last_audio_at > 3.0  # audio in hand: seconds
    assert turn.longest_quiet_s < MAX_QUIET_S


@pytest.mark.parametrize("sentences", [True, False], ids=["sentences", "tokens"])
def test_eight_calls_are_never_quiet_longer_than_the_bound(sentences: bool) -> None:
    # However much audio a listener has in hand, and whatever else the machine renders.
    sim = Simulation(config=_config())
    _calls(sim, corpus_texts("calls.tsv") + list(LONG_REPLIES), 8, seed=8, sentences=sentences)
    turns = sim.run()
    assert len(turns) == 24 and all(t.done for t in turns)
    assert max(t.longest_quiet_s for t in turns) < MAX_QUIET_S


def test_without_the_quiet_bound_the_same_calls_go_quiet_for_seconds() -> None:
    # The test can fail: a policy that lets a listener's audio in hand decide alone does.
    sim = Simulation(config=_config(), settings=SchedulerSettings(max_quiet_s=None))
    _calls(sim, corpus_texts("calls.tsv") + list(LONG_REPLIES), 8, seed=8, sentences=False)
    turns = sim.run()
    assert max(t.longest_quiet_s for t in turns) > 2 * MAX_QUIET_S
