"""The native protocol (``WS /v1/stream``) against 5,000 generated frames, driven without a server:
the pure ``NativeProtocol`` on a real ``Session`` with the real voice registry. Whatever arrives,
no exception escapes, every frame sent back is strict JSON in UTF-8, every error has a catalogued
code, and the connection stays usable."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fuzz_inputs import (
    FRAMES_PER_EXAMPLE,
    FUZZ,
    METRICS,
    assert_catalogued,
    assert_strict_json,
    encode,
    junk_frames,
    mutated,
    names,
    nasty_text,
)
from voxflow.engines.registry import VoiceRegistry
from voxflow.session.events import (
    AudioOut,
    ClientEvent,
    DoneOut,
    ErrorOut,
    Output,
    SubmitSegment,
)
from voxflow.session.options import MAX_NAME_CHARS, SessionConfig
from voxflow.session.session import Session
from voxflow.transports.native.protocol import NativeProtocol

contexts = st.one_of(st.sampled_from(["a", "b", "default"]), names)
texts = st.one_of(st.sampled_from(["Hello there. ", "It costs $3.50, ok? ", " ", ""]), nasty_text)

START: dict[str, Any] = {
    "type": "start",
    "context_id": "a",
    "voice": "joe",
    "output_format": "pcm_22050",
    "speed": 1.25,
    "seed": 7,
    "noise_scale": 0.5,
    "noise_w": 0.8,
    "speaker_id": 0,
    "chunk_length_schedule": [50, 120],
    "auto_mode": False,
    "apply_text_normalization": "on",
    "lexicon": [{"word": "voxflow", "respelling": "vox flow"}],
}
starts = st.builds(lambda cid: {**START, "context_id": cid}, contexts)
others = st.builds(
    lambda kind, cid, text, played: {
        "type": kind,
        "context_id": cid,
        "text": text,
        "played_ms": played,
    },
    st.sampled_from(["text", "flush", "end", "cancel"]),
    contexts,
    texts,
    st.sampled_from([0, 120.5, 10_000]),
)
messages = st.one_of(starts, others)

# A frame: a message (valid or mutated), written as lenient JSON; or no message at all.
frames = st.one_of(
    st.builds(encode, messages),
    st.builds(encode, mutated(messages)),
    st.builds(encode, mutated(messages), st.just(False)),  # a lone surrogate as itself
    junk_frames,
    st.binary(max_size=32),  # a binary frame
)


class _Session(Session):
    """A session that remembers which contexts were ended, so the test can answer them the way
    the runtime would (their audio and ``done``), as the runner's writer hands them over."""

    def __init__(self, registry: VoiceRegistry) -> None:
        # The voice's own rate by default: a resampler's filter bank for every context opened
        # would only slow the test down (the output format is not what is fuzzed here).
        config = SessionConfig(default_voice=registry.default_voice, default_format="pcm_22050")
        super().__init__(config, registry.get)
        self.ended: list[str] = []

    def end(self, context_id: str | None, now: float) -> None:
        super().end(context_id, now)
        self.ended.append(context_id or "default")


def _check_reply(protocol: NativeProtocol, event: Any) -> None:
    reply = protocol.reply(event)
    for frame in reply.frames:
        if isinstance(frame, bytes):
            continue  # the audio of a binary-mode audio message
        body = assert_strict_json(frame)
        assert isinstance(body, dict) and body["type"] in (
            "audio",
            "timestamps",
            "done",
            "cancelled",
            "error",
        )
        if body["type"] == "error":
            assert_catalogued(body["code"])
            assert body["context_id"] is None or len(body["context_id"]) <= MAX_NAME_CHARS


def _pump(session: _Session, protocol: NativeProtocol) -> list[Output]:
    """Hand the session's events to the protocol as the runner would; the session's outputs."""
    outputs = session.drain()
    for output in outputs:
        if isinstance(output, ClientEvent):
            if isinstance(output, ErrorOut):
                assert_catalogued(output.code)
            _check_reply(protocol, output)
    for cid in session.ended:
        _check_reply(protocol, AudioOut(cid, 0, 0.0, 10.0, b"\x00\x00" * 8))
        _check_reply(protocol, DoneOut(cid, METRICS))
    session.ended.clear()
    return outputs


def _drive(registry: VoiceRegistry, batch: list[str | bytes], binary: bool) -> None:
    session = _Session(registry)
    protocol = NativeProtocol(session, lambda: 0.0, binary=binary)
    for frame in batch:
        protocol.receive(frame)
        _pump(session, protocol)
    # Still usable: a new context takes text, unless the frames filled the connection.
    protocol.receive(encode({"type": "text", "context_id": "final", "text": "Hello there. "}))
    protocol.receive(encode({"type": "flush", "context_id": "final"}))
    outputs = _pump(session, protocol)
    errors = [o.code for o in outputs if isinstance(o, ErrorOut)]
    assert errors in ([], ["too_many_contexts"], ["too_many_contexts", "unknown_context"])
    if not errors:
        assert any(isinstance(o, SubmitSegment) for o in outputs)


# 350 examples of 10 frames, mostly messages, and 150 of 10 junk frames: 5,000 frames (the
# same every run: derandomized).
@settings(FUZZ, max_examples=350)
@given(
    batch=st.lists(frames, min_size=FRAMES_PER_EXAMPLE, max_size=FRAMES_PER_EXAMPLE),
    binary=st.booleans(),
)
def test_native_protocol_survives_any_frames(
    registry: VoiceRegistry, batch: list[str | bytes], binary: bool
) -> None:
    _drive(registry, batch, binary)


@settings(FUZZ, max_examples=150)
@given(batch=st.lists(junk_frames, min_size=FRAMES_PER_EXAMPLE, max_size=FRAMES_PER_EXAMPLE))
def test_native_protocol_survives_junk(registry: VoiceRegistry, batch: list[str | bytes]) -> None:
    _drive(registry, batch, binary=False)
