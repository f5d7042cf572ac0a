"""The context table that ElevenLabs' multi-stream and Cartesia's WebSocket share."""

from __future__ import annotations

import pytest

from voxflow.session.errors import SessionError
from voxflow.transports.contexts import DEFAULT_CONTEXT, ContextTable


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_a_reopened_id_gets_its_events_after_the_old_context_finishes() -> None:
    table: ContextTable[str] = ContextTable(Clock())
    table.opened("a", "first")
    assert table.close("a") == "first" and table.get("a") is None
    table.opened("a", "second")
    assert table.get("a") == "second"
    assert table.current("a") == "first"  # the old one's last events are still to come
    assert table.finish("a") == "first" and table.get("a") == "second"
    assert table.current("a") == "second"
    assert table.finish("a") == "second" and table.get("a") is None
    assert not table.in_flight() and table.finish("a") is None


def test_the_open_contexts_may_be_closed_while_listed() -> None:
    table: ContextTable[int] = ContextTable(Clock())
    for n, cid in enumerate("abc"):
        table.opened(cid, n)
    for cid, _ in table.open_items():
        table.close(cid)
    assert list(table) == [] and table.in_flight()


@pytest.mark.parametrize(
    ("message", "expected"),
    [({}, DEFAULT_CONTEXT), ({"context_id": None}, DEFAULT_CONTEXT), ({"context_id": "x"}, "x")],
)
def test_a_context_id_names_a_context_or_the_default(
    message: dict[str, object], expected: str
) -> None:
    assert ContextTable.context_id(message) == expected


@pytest.mark.parametrize("cid", ["", 3, ["a"], "a\x00b", "x" * 1000])
def test_a_bad_context_id_is_refused(cid: object) -> None:
    with pytest.raises(SessionError) as refused:
        ContextTable.context_id({"context_id": cid})
    assert refused.value.code == "invalid_message"


def test_binary_frames_and_non_objects_are_refused() -> None:
    table: ContextTable[str] = ContextTable(Clock())
    for frame in (b"{}", "[]", "not json"):
        with pytest.raises(SessionError):
            table.message(frame)
    assert table.message('{"text": "hi"}') == {"text": "hi"}


def test_the_inactivity_deadline_runs_from_the_last_activity() -> None:
    clock = Clock()
    table: ContextTable[str] = ContextTable(clock)
    assert table.inactive_at(20.0) == 30.0
    clock.now = 25.0
    table.touch()
    assert table.inactive_at(20.0) == 45.0
