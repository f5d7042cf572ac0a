"""Tests for voxflow.runtime.handover: switch points on real utterances."""

from __future__ import annotations

import pytest

from voxflow.engines.base import Utterance, VoiceSettings
from voxflow.engines.piper import PiperEngine
from voxflow.runtime.handover import Switch, choose_switch, frame_at
from voxflow.session.pieces import switch_points
from voxflow.text.normalize.normalizer import Normalized

LEAD = "Your order left the warehouse"
WHOLE = "Your order left the warehouse this morning and should arrive on Thursday."


@pytest.fixture(scope="module")
def utterances(engine: PiperEngine) -> tuple[Utterance, Utterance]:
    settings = VoiceSettings(seed=2)
    return engine.prepare(LEAD, "joe", settings), engine.prepare(WHOLE, "joe", settings)


def test_frame_at_finds_word_starts(utterances: tuple[Utterance, Utterance]) -> None:
    lead, _ = utterances
    assert frame_at(lead, 0) == 0
    order = lead.words[1]
    assert frame_at(lead, order.char_start) == order.start_frame
    assert frame_at(lead, order.char_start - 1) == order.start_frame
    assert frame_at(lead, len(LEAD)) == lead.num_frames


def test_nothing_rendered_drops_the_lead(utterances: tuple[Utterance, Utterance]) -> None:
    lead, whole = utterances
    points = switch_points(Normalized.identity(LEAD), Normalized.identity(WHOLE))
    assert choose_switch(lead, whole, points, 0) == Switch(0, 0)


def test_the_switch_is_the_first_word_start_past_what_was_rendered(
    utterances: tuple[Utterance, Utterance],
) -> None:
    lead, whole = utterances
    points = switch_points(Normalized.identity(LEAD), Normalized.identity(WHOLE))
    for rendered in range(1, lead.num_frames):
        switch = choose_switch(lead, whole, points, rendered)
        assert switch.lead_end > rendered
        # The lead's words before the switch and the whole's words after it are the sentence.
        heard = [w.word for w in lead.words if w.start_frame < switch.lead_end]
        heard += [w.word for w in whole.words if w.start_frame >= switch.start]
        assert heard == WHOLE.rstrip(".").split(), rendered


def test_a_lead_rendered_to_its_end_hands_over_after_its_last_word(
    utterances: tuple[Utterance, Utterance],
) -> None:
    lead, whole = utterances
    points = switch_points(Normalized.identity(LEAD), Normalized.identity(WHOLE))
    switch = choose_switch(lead, whole, points, lead.num_frames)
    assert switch.lead_end == lead.num_frames
    assert switch.start == frame_at(whole, WHOLE.index("this"))
