"""The server-wide cap on streams, as sessions use it: a slot per open context, taken when it
opens and given back however it ends; refusals that carry their retry hint; draining."""

from __future__ import annotations

import pytest

from voxflow.engines.registry import VoiceRegistry
from voxflow.runtime.jobs import Drained
from voxflow.session.admission import Admission, AdmissionSettings, Refusal
from voxflow.session.events import ErrorOut, OpenStream, Output
from voxflow.session.local import drain_encoded
from voxflow.session.session import Session, SessionConfig, StartOptions


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
    assert admission.active == 2 and admission.saturated
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
    assert refusals == [Refusal.DRAINING]
    assert admission.active == 1 and session.open_contexts == 1


def test_a_release_without_an_acquire_is_logged_not_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    admission = Admission(AdmissionSettings(max_streams=1))
    admission.release()
    assert admission.active == 0
    assert "released twice" in caplog.text
    admission.acquire()
    assert admission.saturated


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_streams"):
        AdmissionSettings(max_streams=0)
    with pytest.raises(ValueError, match="retry_after_s"):
        AdmissionSettings(max_streams=1, retry_after_s=0)
