"""The Deepgram WebSocket protocol (``WS /v1/speak``) against 5,000 generated frames and generated
query strings, driven without a server: the pure ``DeepgramProtocol`` on a real ``Session``, its
audio made at once by ``InstantRuntime`` (the simulation's stand-in engine: no model, no
workers). The frames are Speak, Flush, Clear and Close messages (valid ones, ones with a field of
any type or an unknown field, texts past Deepgram's limit), other message types, binary frames and
junk, on a fake clock, with the session's events served and handed back after each frame or only
after several (so that they cross the client's next frames: a Clear racing a turn's end).

Whatever arrives: no exception escapes and nothing is logged as an error. A refused query string
is Deepgram's REST error object with a 4xx status. Every text frame sent back is strict JSON in
UTF-8 in Deepgram's shape, every binary frame is audio. A frame Deepgram does not accept (not a
JSON object, an unknown type, a Speak without a string text or over 2,000 characters, a binary
frame) is refused with exactly one ``Error`` message (a catalogued code under Deepgram's name) and
the close its table says, as the connection's last frame, and nothing sent after it is read; an
accepted frame never is. A Flush over the rate limit gets a ``Warning`` and the connection goes on.
``Flushed`` and ``Cleared`` come in order of their sequence ids, no audio follows one until the
client spoke again after its Flush or Clear, and a connection that closes normally has answered
every Clear, and every Flush no Clear overtook, and holds no context. A valid turn after all that
(on the same connection, or on a new one after a refusal closed it) is spoken and flushed, and
Close then ends the connection normally."""

from __future__ import annotations

import re
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fuzz_inputs import (
    FRAMES_PER_EXAMPLE,
    FUZZ,
    ErrorLog,
    assert_catalogued,
    assert_strict_json,
    encode,
    junk_frames,
    mutated,
    names,
    nasty_text,
    weighted_mix,
)
from tests.support.instant_runtime import InstantRuntime
from tests.support.protocols import new_session, protocol_context
from tests.support.simulation import SimEngine
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.wire import Reply
from voxflow.session.errors import SessionError
from voxflow.session.events import ClientEvent, ErrorOut
from voxflow.session.options import clean_text
from voxflow.transports.deepgram.errors import http_error
from voxflow.transports.deepgram.protocol import (
    FLUSH_LIMIT,
    FLUSH_WINDOW_S,
    SPEAK_MAX_CHARS,
    DeepgramProtocol,
)
from voxflow.transports.deepgram.query import SpeakOptions, parse_speak_query
from voxflow.transports.json_body import decode_object, dump

Frame = str | bytes
# The voice's own rate: no resampler to build for every connection (the format is not fuzzed in
# the frames; the generated query strings pick others).
GOOD_QUERY = {"model": "aura-2-thalia-en", "encoding": "linear16", "sample_rate": "22050"}
# Deepgram's name for each refusal of a client frame, and the close that follows it.
REFUSALS = {
    "invalid_json": ("UNPARSABLE_CLIENT_MESSAGE", 1008),
    "invalid_message": ("UNPARSABLE_CLIENT_MESSAGE", 1008),
    "unknown_type": ("UNPARSABLE_CLIENT_MESSAGE", 1008),
    "text_too_long": ("INPUT_TOO_LONG", 1009),
}
WORD = re.compile("[A-Za-z]")  # a text with one of these has a word to speak
WARNING_KEYS = frozenset({"type", "code", "description", "warn_code", "warn_msg"})

# Short utterances (about a sixth of the bundled voice's audio a character): the protocol is
# fuzzed, not the audio, and rendering is most of a run's time.
ENGINE = SimEngine(frames_per_char=1.0, lead_frames=1, tail_frames=2)


@pytest.fixture(scope="module")
def context() -> ProtocolContext:
    return protocol_context()


# -- inputs ---------------------------------------------------------------------------------------


texts = weighted_mix(
    (
        3,
        st.sampled_from(
            [
                "Hello there. ",
                "It costs $3.50, ok? ",
                "and then",
                " ",
                "",
                "word " * (SPEAK_MAX_CHARS // 5),  # Deepgram's limit exactly
                "a" * (SPEAK_MAX_CHARS + 1),  # one past it
            ]
        ),
    ),
    (1, nasty_text),
)
speaks = st.builds(lambda text: {"type": "Speak", "text": text}, texts)
# Speak the most; Flush; Clear, which races the turns it stops; now and then Close.
valid_messages = weighted_mix(
    (8, speaks),
    (4, st.just({"type": "Flush"})),
    (3, st.just({"type": "Clear"})),
    (1, st.just({"type": "Close"})),
)
# Types Deepgram's speech-to-text or other APIs have, a lower-case one, none at all.
strangers = st.sampled_from(
    [{"type": "speak", "text": "Hi."}, {"type": "Finalize"}, {"type": "KeepAlive"}, {"text": "Hi."}]
)
messages = weighted_mix((9, valid_messages), (1, strangers))

# A frame: a message (valid or mutated), written as lenient JSON; or no message at all. (Valid
# messages the most: any other frame ends the connection.)
frames = weighted_mix(
    (5, st.builds(encode, messages)),
    (2, st.builds(encode, mutated(messages))),
    (1, st.builds(encode, mutated(messages), st.just(False))),  # a lone surrogate as itself
    (1, junk_frames),
    (1, st.binary(max_size=32)),  # a binary frame (the client's audio, say)
)
# What the harness does after a frame: nothing, serve the session (its client events then wait
# and cross the next frames, as the runner's writer lags its reader), or serve and hand them over.
Step = Literal["wait", "serve", "pump"]
steps: st.SearchStrategy[Step] = st.sampled_from(["wait", "serve", "serve", "pump", "pump"])
# Seconds before a frame: at once, or past the Flush rate limit's window.
delays = st.sampled_from([0.0, 0.0, 0.02, 0.6, FLUSH_WINDOW_S + 1.0])
sends = st.tuples(frames, delays, steps)
valid_sends = st.tuples(st.builds(encode, valid_messages), delays, steps)
# Whether the connection starts with Flushes up to the rate limit (its next ones are warned).
bursts = st.sampled_from([False, False, False, True])

query_values = {
    "model": st.sampled_from(["aura-asteria-en", "aura-2-thalia-en", "joe", "", "aura-x", "nova"]),
    "encoding": st.sampled_from(["linear16", "LINEAR16", "mulaw", "alaw", "mp3", "opus", ""]),
    "sample_rate": st.sampled_from(["22050", "24000", "8000", "48000", "0", "12345", "1_0", "٣"]),
    "speed": st.sampled_from(["1", "0.8", "1.25", "4.5", "0.1", "NaN", "-1", "1e3"]),
    "container": st.sampled_from(["none", "wav", "ogg"]),
    "bit_rate": st.sampled_from(["48000", "x"]),
    "mip_opt_out": st.sampled_from(["true", "false"]),
    "tag": names,
}
# A query string's values, as the URL decoding leaves them: the ones Deepgram documents, or any
# text in any of them.
queries = st.builds(
    lambda chosen, nasty: {**GOOD_QUERY, **chosen, **nasty},
    st.fixed_dictionaries({}, optional=query_values),
    st.dictionaries(st.sampled_from(sorted(query_values)), nasty_text, max_size=1),
)


def _refusal(frame: Frame) -> str | None:
    """The session error code Deepgram refuses ``frame`` with, or None for a message it takes (its
    documented rules, with the JSON decoding and text cleaning every protocol shares)."""
    if isinstance(frame, bytes):
        return "invalid_message"
    try:
        message = decode_object(frame)
    except SessionError as error:
        return error.code
    kind = message.get("type")
    if not isinstance(kind, str) or kind not in ("Speak", "Flush", "Clear", "Close"):
        return "unknown_type"
    if kind == "Speak":
        text = message.get("text")
        if not isinstance(text, str):
            return "invalid_message"
        if len(text) > SPEAK_MAX_CHARS:
            return "text_too_long"
        try:
            clean_text(text)
        except SessionError as error:  # a lone surrogate
            return error.code
    return None


# -- one connection -------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Connection:
    """A protocol on a session, served at once, and what its client has sent and seen."""

    def __init__(self, context: ProtocolContext, options: SpeakOptions, clock: _Clock) -> None:
        self.clock = clock
        self.session = new_session()
        self.protocol = DeepgramProtocol(self.session, clock, options, context.max_buffered_chars)
        self.runtime = InstantRuntime(self.session, ENGINE)
        self.pending: list[ClientEvent] = []  # served, not yet handed to the protocol
        self.sent = 0  # frames sent
        self.refusal: str | None = None  # the code of the refused frame, whose Error is due
        self.closing = False  # Close was sent: nothing more is read
        self.closed: int | None = None  # the close code, once closed
        self.flush_times: list[float] = []  # when the processed Flushes came
        self.sequence = 0  # Flushes and Clears processed: the next sequence id
        self.flushes: dict[int, int] = {}  # sequence id of each processed Flush -> its frame
        self.clears: dict[int, int] = {}  # and of each Clear
        self.answered: list[int] = []  # sequence ids of the Flushed and Cleared seen, in order
        self.last_speak = -1  # the frame of the last Speak
        self.quiet_after = -1  # no audio unless a Speak came after this frame
        self.audio = 0  # audio frames seen
        self.audio_since_answer = 0  # since the last Flushed or Cleared
        self.words = False  # whether the text since the last Flush or Clear has a word
        self.flush_words: dict[int, bool] = {}  # and whether each Flush's turn had

    @property
    def live(self) -> bool:
        """Whether the protocol still reads the client's frames."""
        return self.closed is None and self.refusal is None and not self.closing

    def send(self, frame: Frame) -> None:
        assert self.closed is None
        index, self.sent = self.sent, self.sent + 1
        if not self.live:
            assert self.protocol.receive(frame) is None  # not read
            return
        refusal = _refusal(frame)
        if refusal is not None:
            assert self.protocol.receive(frame) is None  # its Error follows the events before it
            self.refusal = refusal
            return
        assert isinstance(frame, str)
        message = decode_object(frame)
        kind = message["type"]
        warned = False
        if kind == "Speak":
            self.last_speak = index
            self.words |= WORD.search(message["text"]) is not None
        elif kind == "Flush":
            window = [t for t in self.flush_times if self.clock.now - t < FLUSH_WINDOW_S]
            warned = len(window) >= FLUSH_LIMIT
            if not warned:
                self.flush_times.append(self.clock.now)
                self.flushes[self.sequence] = index
                self.flush_words[self.sequence], self.words = self.words, False
                self.sequence += 1
        elif kind == "Clear":
            self.words = False
            self.clears[self.sequence] = index
            self.sequence += 1
        else:
            self.closing = True
        reply = self.protocol.receive(frame)
        if warned:
            # As Deepgram does: not processed, and said so; the connection goes on.
            assert reply is not None and reply.close is None and len(reply.frames) == 1
            (warning,) = reply.frames
            assert isinstance(warning, str)
            body = assert_strict_json(warning)
            assert set(body) == WARNING_KEYS and body["type"] == "Warning"
            assert body["code"] == body["warn_code"] == "FLUSH_LIMIT_EXCEEDED"
            assert body["description"] == body["warn_msg"]
        elif reply is not None:
            self._receive(reply, None)

    def serve(self) -> None:
        """Run what the session asked for; its client events wait to be handed over."""
        self.pending.extend(
            o for o in self.runtime.serve(self.clock.now) if isinstance(o, ClientEvent)
        )

    def deliver(self) -> None:
        """Hand the waiting client events to the protocol, as the runner's writer does."""
        events, self.pending = self.pending, []
        for event in events:
            if self.closed is not None:
                return  # the runner has closed the socket: nothing more goes out
            if isinstance(event, ErrorOut):
                assert_catalogued(event.code)
            self._receive(self.protocol.reply(event), event)

    def pump(self) -> None:
        """Serve and hand over until nothing more comes."""
        while True:
            self.serve()
            if not self.pending:
                break
            self.deliver()
        if self.closed is None:
            assert self.refusal is None, f"no Error for a frame refused as {self.refusal}"
            assert not self.closing, "Close sent, everything spoken, and still open"

    def _receive(self, reply: Reply[Frame], event: ClientEvent | None) -> None:
        """Check one reply as the client receives it."""
        for frame in reply.frames:
            if isinstance(frame, bytes):
                assert frame, "an empty audio frame"
                assert self.last_speak > self.quiet_after, "audio after its Flushed or Cleared"
                self.audio += 1
                self.audio_since_answer += 1
                continue
            body = assert_strict_json(frame)
            assert isinstance(body, dict)
            if body["type"] == "Error":
                assert isinstance(event, ErrorOut), "an Error that no session error asked for"
                assert self.refusal is not None, f"an Error for a frame Deepgram takes: {body}"
                assert frame is reply.frames[-1] and reply.close is not None
                name, close = REFUSALS[self.refusal]
                assert set(body) == {"type", "code", "description"} and body["code"] == name
                assert body["description"] and reply.close.code == close, (body, reply.close)
                self.closed = close
                return
            assert body["type"] in ("Flushed", "Cleared"), body
            assert set(body) == {"type", "sequence_id"}
            sequence_id = body["sequence_id"]
            asked = self.flushes if body["type"] == "Flushed" else self.clears
            assert sequence_id in asked, f"{body} answers no {body['type'][:-2]}"
            assert not self.answered or sequence_id > self.answered[-1], (self.answered, body)
            self.answered.append(sequence_id)
            if body["type"] == "Flushed" and self.flush_words[sequence_id]:
                assert self.audio_since_answer, f"{body}: its turn's words were never spoken"
            self.audio_since_answer = 0
            self.quiet_after = max(self.quiet_after, asked[sequence_id])
        if reply.close is not None:
            assert reply.close.code == 1000 and self.closing, reply.close
            self._closed_normally()

    def _closed_normally(self) -> None:
        self.closed = 1000
        assert self.session.open_contexts == 0
        assert set(self.clears) <= set(self.answered), "a Clear without its Cleared"
        overtaken = max(self.clears, default=-1)
        missing = [s for s in self.flushes if s > overtaken and s not in self.answered]
        assert not missing, f"Flushes without their Flushed: {missing}"


def _options(context: ProtocolContext, query: dict[str, str]) -> SpeakOptions | None:
    """The options of a connection with ``query``, or None when the handshake refuses them
    (with Deepgram's REST error object)."""
    try:
        return parse_speak_query(context, query, websocket=True)
    except SessionError as error:
        assert_catalogued(error.code)
        refusal = http_error(error.code, error.message, "request-id")
        assert 400 <= refusal.status < 500, (error.code, refusal.status)
        body = assert_strict_json(dump(refusal.body))
        assert set(body) == {"err_code", "err_msg", "request_id"}
        assert body["err_code"] and body["err_msg"] == error.message
        return None


def _drive(
    context: ProtocolContext,
    query: dict[str, str],
    burst: bool,
    batch: list[tuple[Frame, float, Step]],
) -> None:
    clock = _Clock()
    good = _options(context, GOOD_QUERY)
    assert good is not None
    # The query's connection, or, when the handshake refuses it, one with the good query.
    connection = _Connection(context, _options(context, query) or good, clock)
    if burst:  # Flushes up to the rate limit: the batch's next ones in the window are warned
        for _ in range(FLUSH_LIMIT):
            connection.send(encode({"type": "Flush"}))
    for frame, delay, step in batch:
        if connection.closed is not None:
            # The client reconnects, as Deepgram's clients do after a close.
            connection = _Connection(context, good, clock)
        clock.now += delay
        connection.send(frame)
        if step != "wait":
            connection.serve()
        if step == "pump":
            connection.pump()
    connection.pump()
    if connection.closed is not None:
        connection = _Connection(context, good, clock)
    # A valid turn still works: spoken, then flushed; Close then ends the connection normally.
    clock.now += FLUSH_WINDOW_S  # past the rate limit's window
    audio = connection.audio
    connection.send(encode({"type": "Speak", "text": "Hello there. "}))
    connection.send(encode({"type": "Flush"}))
    flush = connection.sequence - 1
    connection.pump()
    assert connection.audio > audio and connection.answered[-1:] == [flush]
    connection.send(encode({"type": "Close"}))
    connection.pump()
    assert connection.closed == 1000


# 300 examples of 10 frames of any kind (most connections end in a refusal, as Deepgram's do on a
# bad frame) and 200 of 10 valid messages (long-lived connections, turns queued and cleared):
# 5,000 frames, with a generated query string each (the same every run: derandomized).
@settings(FUZZ, max_examples=300)
@given(
    query=queries,
    burst=bursts,
    batch=st.lists(sends, min_size=FRAMES_PER_EXAMPLE, max_size=FRAMES_PER_EXAMPLE),
)
def test_deepgram_socket_survives_any_frames(
    context: ProtocolContext,
    error_log: ErrorLog,
    query: dict[str, str],
    burst: bool,
    batch: list[tuple[Frame, float, Step]],
) -> None:
    error_log.records.clear()
    _drive(context, query, burst, batch)
    assert not error_log.records, [record.getMessage() for record in error_log.records]


@settings(FUZZ, max_examples=200)
@given(
    burst=bursts,
    batch=st.lists(valid_sends, min_size=FRAMES_PER_EXAMPLE, max_size=FRAMES_PER_EXAMPLE),
)
def test_deepgram_socket_keeps_its_turns_in_order(
    context: ProtocolContext,
    error_log: ErrorLog,
    burst: bool,
    batch: list[tuple[Frame, float, Step]],
) -> None:
    error_log.records.clear()
    _drive(context, GOOD_QUERY, burst, batch)
    assert not error_log.records, [record.getMessage() for record in error_log.records]
