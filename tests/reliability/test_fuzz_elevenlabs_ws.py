"""The ElevenLabs WebSocket protocol (``stream-input`` and ``multi-stream-input``) against 5,000
generated frames and generated query strings, driven without a server: the pure
``ElevenLabsProtocol`` on a real ``Session`` with the real voice registry. Whatever arrives, no
exception escapes, every frame sent back is strict JSON in UTF-8, and every error is ElevenLabs'
error frame with a catalogued code, followed by a close as its table says."""

from __future__ import annotations

from typing import Any

import pytest
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
from tests.support.protocols import protocol_context, session_config, voice_registry
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.wire import Reply
from voxflow.session.events import (
    AudioOut,
    ClientEvent,
    DoneOut,
    ErrorOut,
)
from voxflow.session.session import Session
from voxflow.transports.elevenlabs.errors import error_name, socket_error
from voxflow.transports.elevenlabs.protocol import ElevenLabsProtocol, driver_contexts

GOOD_QUERY = {"output_format": "pcm_22050"}  # the voice's rate: no resampler to build


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return protocol_context()


contexts = st.one_of(st.sampled_from(["a", "b", "default"]), names)
texts = st.one_of(st.sampled_from(["Hello there. ", "It costs $3.50, ok? ", " ", ""]), nasty_text)
TEMPLATES: tuple[dict[str, Any], ...] = (
    {
        "text": " ",
        "voice_settings": {"speed": 1.1, "stability": 0.5, "similarity_boost": 0.8},
        "generation_config": {"chunk_length_schedule": [120, 160, 250, 290]},
        "xi_api_key": "key",
    },
    {"text": "Hello there. ", "try_trigger_generation": True},
    {"text": "Tell me more, ", "flush": True},
    {"text": "", "flush": True},
    {"text": ""},
    {"close_context": True},
    {"close_socket": True},
)
messages = st.builds(
    lambda template, cid, text: {
        **template,
        "context_id": cid,
        **({} if "text" not in template or template["text"] in ("", " ") else {"text": text}),
    },
    st.sampled_from(TEMPLATES),
    contexts,
    texts,
)
frames = st.one_of(
    st.builds(encode, messages),
    st.builds(encode, mutated(messages)),
    st.builds(encode, mutated(messages), st.just(False)),
    junk_frames,
    st.binary(max_size=32),
)

query_values = {
    "output_format": st.sampled_from(["pcm_22050", "mp3_44100_128", "pcm_1", ""]),
    "inactivity_timeout": st.sampled_from(["20", "1", "180", "0", "181", "-1", "1e3", "NaN"]),
    "seed": st.sampled_from(["7", "0", "4294967295", "4294967296", "-1", "1.5", "1_0", "٣"]),
    "auto_mode": st.sampled_from(["true", "false", "1", "yes"]),
    "apply_text_normalization": st.sampled_from(["auto", "on", "off", "sometimes"]),
    "model_id": st.just("eleven_flash_v2_5"),
}
# A query string's values, as the URL decoding leaves them: the ones ElevenLabs documents, or any
# text in any of them.
queries = st.builds(
    lambda chosen, nasty: {**GOOD_QUERY, **chosen, **nasty},
    st.fixed_dictionaries({}, optional=query_values),
    st.dictionaries(st.sampled_from(sorted(query_values)), nasty_text, max_size=1),
)
voice_ids = st.one_of(st.sampled_from(["joe", "21m00Tcm4TlvDq8ikWAM"]), names)


class _Session(Session):
    """Remembers which contexts were ended, so the test can answer them as the runtime would."""

    def __init__(self, context: ProtocolContext, multi: bool) -> None:
        config = session_config(max_contexts=driver_contexts(context, multi))
        super().__init__(config, voice_registry().get)
        self.ended: list[str] = []

    def end(self, context_id: str | None, now: float) -> None:
        super().end(context_id, now)
        self.ended.append(context_id or "default")


def _check(reply: Reply[str], event: object) -> bool:
    """Check one reply's frames; whether it closes the connection."""
    for frame in reply.frames:
        body = assert_strict_json(frame)
        assert isinstance(body, dict)
        if "error" in body:
            assert isinstance(event, ErrorOut)
            expected = socket_error(event.code, event.message)
            assert body == {**expected.frame}
            assert body["error"] == error_name(event.code)
            # Closed with the frame's own code, unless the table keeps the connection.
            close = None if reply.close is None else reply.close.code
            assert close == expected.close_code
    return reply.close is not None


class _Connection:
    """One connection: a session and its protocol, and whether it has closed."""

    def __init__(
        self, context: ProtocolContext, voice_id: str, query: dict[str, str], multi: bool
    ) -> None:
        self.session = _Session(context, multi)
        self.protocol = ElevenLabsProtocol(
            self.session, lambda: 0.0, context, voice_id, query, multi
        )
        self.closed = False
        self.pump()

    def pump(self) -> None:
        """Hand the session's events to the protocol as the runner's writer would."""
        for output in self.session.drain():
            if isinstance(output, ClientEvent) and not self.closed:
                if isinstance(output, ErrorOut):
                    assert_catalogued(output.code)
                self.closed = _check(self.protocol.reply(output), output)
        for cid in self.session.ended:
            for event in (AudioOut(cid, 0, 0.0, 10.0, b"\x00\x00" * 8), DoneOut(cid, METRICS)):
                if not self.closed:
                    self.closed = _check(self.protocol.reply(event), event)
        self.session.ended.clear()


def _drive(
    context: ProtocolContext, voice_id: str, query: dict[str, str], multi: bool, batch: list[Any]
) -> None:
    connection = _Connection(context, voice_id, query, multi)
    for frame in batch:
        if connection.closed:
            # The client reconnects, as ElevenLabs' clients do after an error.
            connection = _Connection(context, "joe", GOOD_QUERY, multi)
        connection.protocol.receive(frame)
        connection.pump()
    if not connection.closed:
        connection.protocol.expire()  # the inactivity timeout, with whatever state is left
        connection.pump()
        assert connection.closed


# 500 examples of 10 frames: 5,000 frames, with a generated query string and voice id each
# (the same every run: derandomized).
@settings(FUZZ, max_examples=500)
@given(
    voice_id=voice_ids,
    query=queries,
    multi=st.booleans(),
    batch=st.lists(frames, min_size=FRAMES_PER_EXAMPLE, max_size=FRAMES_PER_EXAMPLE),
)
def test_elevenlabs_socket_survives_any_frames(
    context: ProtocolContext, voice_id: str, query: dict[str, str], multi: bool, batch: list[Any]
) -> None:
    _drive(context, voice_id, query, multi, batch)
