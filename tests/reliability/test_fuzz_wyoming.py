"""The Wyoming protocol against 5,000 generated events, from bytes: each example's events are
written as a Wyoming byte stream (header lines, data and payload parts, some lengths mutated, some
lines junk), read back with the server's own framing (``framing.read_event``) and applied to the
pure ``WyomingProtocol`` on a real ``Session`` with the real voice registry. Whatever arrives, no
exception escapes, every event sent back is strict JSON in UTF-8, and every ``error`` event has a
catalogued code."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fuzz_inputs import (
    FUZZ,
    METRICS,
    assert_catalogued,
    assert_strict_json,
    mutated,
    names,
    nasty_text,
    nasty_value,
)
from tests.support.protocols import protocol_context, session_config, voice_registry
from tests.support.wyoming_messages import Event
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.wire import Reply
from voxflow.session.events import AudioOut, CancelledOut, CloseOut, DoneOut, ErrorOut
from voxflow.session.session import Session
from voxflow.transports.wyoming.framing import BadEvent, read_event
from voxflow.transports.wyoming.protocol import WyomingFrame, WyomingProtocol

EVENTS_PER_EXAMPLE = 10
ANSWERS = frozenset(
    {"info", "pong", "error", "audio-start", "audio-chunk", "audio-stop", "synthesize-stopped"}
)


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return protocol_context()


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as running:
        yield running


# Speakers are strings in Wyoming; a number in one is a speaker id ("²" and "٣" are digits to
# ``str.isdigit``, not to ``int``).
speakers = st.one_of(st.sampled_from(["0", "1", "²", "٣", "9" * 300, ""]), names)
voices = st.fixed_dictionaries(
    {"name": st.one_of(st.just("joe"), names)}, optional={"language": names, "speaker": speakers}
)
texts = st.one_of(st.sampled_from(["Hello there. ", "It costs $3.50, ok? ", ""]), nasty_text)
# (type, data) of the events a client sends, valid ones first.
events = st.one_of(
    st.tuples(st.sampled_from(["describe", "synthesize-stop"]), st.just({})),
    st.tuples(st.just("ping"), st.fixed_dictionaries({"text": texts})),
    st.tuples(
        st.just("synthesize"),
        st.fixed_dictionaries({"text": texts}, optional={"voice": voices, "text_format": names}),
    ),
    st.tuples(st.just("synthesize-start"), st.fixed_dictionaries({}, optional={"voice": voices})),
    st.tuples(st.just("synthesize-chunk"), st.fixed_dictionaries({"text": texts})),
    st.tuples(names, st.dictionaries(nasty_text, nasty_value, max_size=2)),
)


@st.composite
def wire_events(draw: st.DrawFn) -> bytes:
    """One event as the client writes it: a JSON header line, then its data and payload parts."""
    kind, data = draw(events)
    if draw(st.integers(0, 3)) == 0:
        data = draw(mutated(st.just(data)))
    header: dict[str, Any] = {"type": kind, "version": "1.5.2"}
    data_part = b""
    if draw(st.booleans()):
        header["data"] = data
    else:
        data_part = json.dumps(data).encode()
        header["data_length"] = len(data_part)
    payload = draw(st.binary(max_size=16))
    if payload:
        header["payload_length"] = len(payload)
    if draw(st.integers(0, 5)) == 0:
        header = draw(mutated(st.just(header)))  # a type, a length or a data of any kind
    return json.dumps(header).encode() + b"\n" + data_part + payload


wire = st.one_of(
    wire_events(),
    st.binary(max_size=48).map(lambda junk: junk.replace(b"\n", b" ") + b"\n"),  # a junk line
    nasty_text.map(lambda line: line.encode("utf-8", "surrogatepass") + b"\n"),
)


async def _read_all(stream: bytes) -> list[WyomingFrame]:
    """The frames the TCP adapter hands the protocol for ``stream``: events and bad events, up to
    the end of the stream or a fatal one."""
    reader = asyncio.StreamReader(limit=1 << 20)
    reader.feed_data(stream)
    reader.feed_eof()
    frames: list[WyomingFrame] = []
    while True:
        try:
            event = await read_event(reader)
        except BadEvent as error:
            frames.append(error)
            if error.fatal:
                return frames
            continue
        if event is None:
            return frames
        frames.append(event)


class _Session(Session):
    """Remembers which contexts were ended, so the test can answer them as the runtime would."""

    def __init__(self, context: ProtocolContext) -> None:
        super().__init__(session_config(), voice_registry().get)
        self.ended: list[str] = []

    def end(self, context_id: str | None, now: float) -> None:
        super().end(context_id, now)
        self.ended.append(context_id or "default")


def _check(reply: Reply[Event]) -> None:
    for event in reply.frames:
        assert event.type in ANSWERS
        data = assert_strict_json(json.dumps(event.data or {}, ensure_ascii=False, allow_nan=False))
        if event.type == "error":
            assert_catalogued(data["code"])


def _pump(session: _Session, protocol: WyomingProtocol) -> None:
    """Hand the session's events to the protocol as the runner's writer would."""
    for output in session.drain():
        if isinstance(output, ErrorOut | CancelledOut | CloseOut):
            if isinstance(output, ErrorOut):
                assert_catalogued(output.code)
            _check(protocol.reply(output))
    for cid in session.ended:
        _check(protocol.reply(AudioOut(cid, 0, 0.0, 10.0, b"\x00\x00" * 8)))
        _check(protocol.reply(DoneOut(cid, METRICS)))
    session.ended.clear()


# 500 examples of 10 events (or junk lines): 5,000 events (the same every run: derandomized).
@settings(FUZZ, max_examples=500)
@given(batch=st.lists(wire, min_size=EVENTS_PER_EXAMPLE, max_size=EVENTS_PER_EXAMPLE))
def test_wyoming_survives_any_events(
    context: ProtocolContext, runner: asyncio.Runner, batch: list[bytes]
) -> None:
    session = _Session(context)
    protocol = WyomingProtocol(session, lambda: 0.0, context)
    frames = runner.run(_read_all(b"".join(batch)))
    for frame in frames:
        _check(protocol.receive(frame))
        _pump(session, protocol)
    protocol.peer_gone()
