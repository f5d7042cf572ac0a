"""Tests for voxflow.session.listener: when a listener that plays audio as it arrives runs out."""

from __future__ import annotations

from voxflow.session.listener import ListenerClock


def test_nothing_sent_means_nothing_to_run_out_of() -> None:
    clock = ListenerClock()
    assert not clock.started
    assert clock.runs_out_at() is None
    assert clock.in_hand_s(10.0) == 0.0


def test_the_first_chunk_plays_when_it_is_sent() -> None:
    clock = ListenerClock()
    clock.sent(10.0, 0.5)
    assert clock.started
    assert clock.runs_out_at() == 10.5
    assert clock.in_hand_s(10.0) == 0.5
    assert clock.in_hand_s(10.25) == 0.25


def test_chunks_sent_while_audio_plays_queue_behind_it() -> None:
    clock = ListenerClock()
    clock.sent(10.0, 0.5)
    clock.sent(10.0, 0.25)  # sent together: one after the other
    clock.sent(10.25, 1.0)  # sent while the first plays: after what was in hand
    assert clock.runs_out_at() == 11.75
    assert clock.in_hand_s(10.75) == 1.0


def test_a_chunk_sent_right_as_the_audio_runs_out_continues_the_run() -> None:
    clock = ListenerClock()
    clock.sent(10.0, 0.5)
    clock.sent(10.5, 0.5)  # no silence in between
    assert clock.runs_out_at() == 11.0


def test_a_chunk_sent_after_the_audio_ran_out_starts_a_new_run() -> None:
    clock = ListenerClock()
    clock.sent(10.0, 0.5)
    clock.sent(12.0, 0.25)  # the listener heard silence from 10.5 to 12
    assert clock.runs_out_at() == 12.25  # not 10.75: the silence is not made up for
    assert clock.in_hand_s(12.0) == 0.25
    clock.sent(12.25, 0.5)  # and that run goes on
    assert clock.runs_out_at() == 12.75


def test_nothing_is_in_hand_once_it_has_played() -> None:
    clock = ListenerClock()
    clock.sent(10.0, 0.5)
    assert clock.in_hand_s(10.5) == 0.0
    assert clock.in_hand_s(99.0) == 0.0  # never negative
    assert clock.runs_out_at() == 10.5  # still when the audio ran out


def test_zero_length_chunks_are_ignored() -> None:
    clock = ListenerClock()
    clock.sent(10.0, 0.0)  # a header, a codec's empty flush: no sound
    assert not clock.started and clock.runs_out_at() is None
    clock.sent(10.0, 0.5)
    clock.sent(20.0, 0.0)  # does not start a new run either
    assert clock.runs_out_at() == 10.5
    clock.sent(20.0, -1.0)
    assert clock.runs_out_at() == 10.5
