"""The server-wide cap on streams, as sessions use it: a slot per open context, taken when it
opens and given back however it ends; refusals that carry their retry hint; draining."""

from __future__ import annotations

import math

import pytest

from tests.support.simulation import Simulation, Turn
from voxflow.connection.local import drain_encoded
from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.jobs import Drained
from voxflow.runtime.slack import PRESSURE_BOUNDS, SlackStats
from voxflow.session.admission import Admission, AdmissionSettings, Refusal, Ticket, stream_slots
from voxflow.session.context import OPEN_GRACE_S
from voxflow.session.errors import SessionError
from voxflow.session.events import ErrorOut, OpenStream, Output
from voxflow.session.load_limit import LoadLimit, LoadLimitSettings
from voxflow.session.options import SessionConfig, StartOptions
from voxflow.session.session import Session


def _session(admission: Admission) -> Session:
    return Session(SessionConfig(default_voice="joe"), VoiceRegistry().get, admission)


def _drain(session: Session) -> list[Output]:
    return list(drain_encoded(session, lambda: 1.0))


def _errors(outputs: list[Output]) -> list[ErrorOut]:
    return [o for o in outputs if isinstance(o, ErrorOut)]


def test_a_full_server_refuses_the_next_context_with_a_retry_hint() -> None:
    refusals: list[Refusal] = []
    admission = Admission(AdmissionSettings(max_streams=2, retry_after_s=1.5), refusals.append)
    first, second = _session(admission), _session(admission)
    first.start("a", StartOptions(), 0.0)
    first.start("b", StartOptions(), 0.0)
    second.start("c", StartOptions(), 0.0)
    assert admission.active == 2 and admission.saturated(0.0)
    assert not _errors(_drain(first))
    (refused,) = _errors(_drain(second))
    assert refused.code == "concurrency_limited" and refused.context_id == "c"
    assert refused.retryable and refused.retry_after_ms == 1500.0
    assert refusals == [Refusal.SATURATED]
    assert second.open_contexts == 0  # nothing of the refused context is left


def test_every_way_a_context_ends_gives_its_slot_back() -> None:
    admission = Admission(AdmissionSettings(max_streams=8))
    session = _session(admission)
    for cid in ("done", "cancelled", "failed", "closed"):
        session.start(cid, StartOptions(), 0.0)
    done, _, failed, _ = (o.serial for o in _drain(session) if isinstance(o, OpenStream))
    assert admission.active == 4
    session.end("done", 0.0)  # no text: the stream drains at once
    session.synthesis_event(done, Drained(), 1.0)
    assert [type(o).__name__ for o in _drain(session)][-1] == "DoneOut"
    assert admission.active == 3
    session.cancel("cancelled", None, 0.0, 0.0)
    assert admission.active == 2
    session.encode_failed(failed, "boom")
    assert admission.active == 1
    session.close()  # the client left: "closed" goes
    assert admission.active == 0
    session.close()  # twice: nothing is given back that was not taken
    assert admission.active == 0


def test_refused_options_cost_no_slot() -> None:
    admission = Admission(AdmissionSettings(max_streams=1))
    session = _session(admission)
    session.start("a", StartOptions(voice="nobody"), 0.0)
    assert [e.code for e in _errors(_drain(session))] == ["unknown_voice"]
    assert admission.active == 0
    session.start("b", StartOptions(), 0.0)
    assert admission.active == 1


def test_draining_admits_nothing_and_lets_admitted_streams_go_on() -> None:
    refusals: list[Refusal] = []
    admission = Admission(AdmissionSettings(max_streams=4), refusals.append)
    session = _session(admission)
    session.start("a", StartOptions(), 0.0)
    admission.drain()
    session.text("a", "Still speaking. ", 0.0)
    session.start("b", StartOptions(), 0.0)
    (refused,) = _errors(_drain(session))
    assert refused.code == "shutting_down" and refused.retryable
    assert refused.retry_after_ms == 1000.0 * AdmissionSettings().retry_after_s  # Retry-After
    assert refusals == [Refusal.DRAINING]
    assert admission.active == 1 and session.open_contexts == 1


def test_a_release_without_an_acquire_is_logged_not_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    admission = Admission(AdmissionSettings(max_streams=1))
    admission.release(Ticket("piper", 1))
    assert admission.active == 0
    assert "released twice" in caplog.text
    admission.acquire("piper", 1, 0.0)
    assert admission.saturated(0.0)


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_streams"):
        AdmissionSettings(max_streams=-1)
    with pytest.raises(ValueError, match="capacity"):
        AdmissionSettings(capacity=-0.5)
    with pytest.raises(ValueError, match="retry_after_s"):
        AdmissionSettings(max_streams=1, retry_after_s=0)


# -- by cost ---------------------------------------------------------------------------------


def _costs(engine: str) -> float:
    return {"piper": 0.1, "kokoro": 1.0}[engine]


def _by_cost(capacity: float, refusals: list[Refusal] | None = None) -> Admission:
    on_refused = (refusals if refusals is not None else []).append
    return Admission(AdmissionSettings(capacity=capacity), on_refused, costs=_costs)


def test_speaking_streams_are_counted_at_their_engines_cost() -> None:
    refusals: list[Refusal] = []
    admission = _by_cost(1.0, refusals)
    tickets = [admission.acquire("piper", 1, 0.0) for _ in range(10)]
    assert admission.load(0.0) == pytest.approx(1.0)
    with pytest.raises(SessionError) as refused:
        admission.acquire("piper", 1, 0.0)
    assert refused.value.code == "concurrency_limited" and refused.value.retry_after_ms == 1000
    assert "without gaps" in refused.value.message
    assert refusals == [Refusal.SATURATED] and admission.saturated(0.0)
    admission.release(tickets.pop())
    assert not admission.saturated(0.0)
    assert admission.limit == 10 and admission.active == 9


def test_a_stream_that_has_said_everything_costs_nothing_once_its_listener_heard_it() -> None:
    admission = _by_cost(0.25)
    first, second = admission.acquire("piper", 1, 0.0), admission.acquire("piper", 1, 0.0)
    assert not admission.fits("piper", 1, 1.0)
    first.busy_until = 3.0  # all rendered: its listener hears the last of it at 3 s
    assert not admission.fits("piper", 1, 2.9)
    assert admission.fits("piper", 1, 3.0)
    third = admission.acquire("piper", 1, 3.0)
    assert admission.load(3.0) == pytest.approx(0.2) and admission.active == 3
    for ticket in (first, second, third):
        admission.release(ticket)


def test_kokoro_is_counted_at_its_own_cost_and_runs_alone_when_dearer_than_the_capacity() -> None:
    admission = _by_cost(1.7)
    kokoro = admission.acquire("kokoro", 2, 0.0)
    pipers = [admission.acquire("piper", 1, 0.0) for _ in range(7)]
    assert not admission.fits("piper", 1, 0.0) and not admission.fits("kokoro", 2, 0.0)
    small = _by_cost(0.5)
    alone = small.acquire("kokoro", 2, 0.0)  # nothing else speaks: it may
    assert not small.fits("piper", 1, 0.0)
    for ticket in (kokoro, *pipers):
        admission.release(ticket)
    small.release(alone)


def test_an_unpaced_stream_counts_as_a_workers_share_until_it_ends() -> None:
    admission = Admission(
        AdmissionSettings(capacity=1.7, unpaced_share=0.5), costs=_costs
    )  # two workers: 0.85 each
    first = admission.acquire("piper", 1, 0.0, paced=False)
    assert admission.load(0.0) == pytest.approx(0.85)
    second = admission.acquire("piper", 1, 0.0, paced=False)  # one per worker
    assert not admission.fits("piper", 1, 0.0, paced=False)
    assert not admission.fits("piper", 1, 0.0)
    # Rendered and ended, still heard for 7 s: at Piper's pace, not a worker's.
    admission.release(first, heard_until=7.0)
    assert admission.load(1.0) == pytest.approx(0.85 + 0.1)
    assert admission.fits("piper", 1, 1.0) and not admission.fits("piper", 1, 1.0, paced=False)
    admission.release(second)
    assert admission.fits("piper", 1, 1.0, paced=False)
    assert admission.load(7.0) == 0.0


def test_a_count_and_a_cost_limit_together_refuse_at_whichever_comes_first() -> None:
    admission = Admission(AdmissionSettings(max_streams=2, capacity=1.0), costs=_costs)
    a, b = admission.acquire("piper", 1, 0.0), admission.acquire("piper", 1, 0.0)
    with pytest.raises(SessionError, match="limit of 2 active streams"):
        admission.acquire("piper", 1, 0.0)
    assert admission.limit == 2
    admission.release(a)
    admission.release(b)
    assert Admission(AdmissionSettings(), costs=_costs).limit == 0  # no limit at all


def test_a_context_counts_while_it_has_text_and_until_its_listener_heard_it() -> None:
    admission = _by_cost(10.0)
    session = _session(admission)
    session.start("a", StartOptions(), 0.0)
    (ticket,) = admission._tickets  # the session keeps its ticket current
    assert ticket.busy_until == 0.0 + OPEN_GRACE_S  # nothing said yet
    session.text("a", "Hello there, how are you today? ", 0.1)
    assert ticket.busy_until == math.inf
    session.close()
    assert admission.active == 0


def test_an_ended_turn_counts_until_its_listener_heard_it_unless_the_caller_barged_in() -> None:
    # A reply of about 9 s, rendered and sent within the first seconds (render-ahead).
    text = (
        "Sure! Tomorrow in Seattle it will be cloudy in the morning with a high of 58 degrees "
        "and there is a sixty percent chance of rain after three in the afternoon."
    )
    loads = {}
    for barge in (None, 1.5):
        config = SessionConfig(default_voice="sim", default_format="pcm_22050")
        sim = Simulation(config=config, max_load=0.85)
        sim.add_call([Turn(text, 0.0, barge_in_after_s=barge)])
        (turn,) = sim.run(until_s=4.0)
        assert turn.done and sim.admission is not None
        assert turn.stopped == (barge is not None)
        loads[barge] = sim.admission.load(4.0)
        assert sim.admission.active == 0  # the context itself has ended
    assert loads[None] > 0  # still heard: its call is speaking
    assert loads[1.5] == 0  # Pipecat says when the caller barged in, even after the end


def test_a_kokoro_stream_holds_its_slots_of_a_count_cap_and_any_other_one() -> None:
    assert stream_slots("kokoro", 3) == 3
    assert stream_slots("piper", 3) == 1


def test_a_stream_counts_at_what_its_first_second_costs_for_its_first_second() -> None:
    admission = Admission(
        AdmissionSettings(capacity=1.0), costs=_costs, start_costs=lambda _engine: 0.3
    )
    starting = [admission.acquire("piper", 1, 0.0) for _ in range(3)]
    assert admission.load(0.0) == pytest.approx(0.9)
    assert not admission.fits("piper", 1, 0.5)  # a fourth start would not fit now...
    assert admission.load(1.0) == pytest.approx(0.3)  # ... once they are under way: 0.1 each
    assert admission.fits("piper", 1, 1.0)
    for ticket in starting:
        admission.release(ticket)


def test_a_learnt_capacity_is_what_admission_admits_by_and_it_learns_from_refusals() -> None:
    # Jobs that never wait: the slack holds, so a capacity in use grows.
    buckets = [0] * (len(PRESSURE_BOUNDS) + 1)
    stats = SlackStats()

    def slack() -> SlackStats:
        return stats

    limit = LoadLimit(LoadLimitSettings(ceiling=2.0, initial=0.5), slack(), 0.0)
    admission = Admission(AdmissionSettings(), costs=_costs, limit=limit, slack=slack)
    assert admission.capacity == 0.5 and admission.limit == 5
    tickets = [admission.acquire("piper", 1, 0.5) for _ in range(5)]
    with pytest.raises(SessionError):
        admission.acquire("piper", 1, 0.5)
    buckets[0] = 30
    stats = SlackStats(30, tuple(buckets))
    admission.learn(1.0)  # the interval's jobs had all their slack, and a stream was refused
    assert admission.capacity > 0.5
    tickets.append(admission.acquire("piper", 1, 1.0))
    for ticket in tickets:
        admission.release(ticket)
