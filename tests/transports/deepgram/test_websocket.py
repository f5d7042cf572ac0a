"""``WS /v1/speak`` against a real server, driven by the official ``deepgram-sdk`` and, for what
the SDK hides (handshake refusals, close codes), by ``websockets`` sending what Pipecat's
``DeepgramTTSService`` and LiveKit's deepgram plugin send."""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

with warnings.catch_warnings():
    # The SDK probes websockets for a name it deprecated (InvalidStatusCode) when its speak
    # client is imported (lazily, on first use: imported here so that happens now).
    warnings.simplefilter("ignore", DeprecationWarning)
    import deepgram.speak.v1.client  # noqa: F401
    from deepgram import DeepgramClient
    from deepgram.environment import DeepgramClientEnvironment
    from deepgram.speak.v1.socket_client import V1SocketClient
    from deepgram.speak.v1.types import (
        SpeakV1Cleared,
        SpeakV1Flushed,
        SpeakV1Metadata,
        SpeakV1Text,
    )

SENTENCES = (
    "The quick brown fox jumps over the lazy dog. It was a bright cold day in April, and the "
    "clocks were striking thirteen. Nobody expected the orchestra to play for so long. "
)
HEADERS = {"Authorization": "Token not-needed"}  # what every Deepgram client sends


def _sdk(server_url: str) -> DeepgramClient:
    ws = server_url.replace("http://", "ws://")
    environment = DeepgramClientEnvironment(
        base=server_url, production=ws, agent=ws, agent_rest=server_url
    )
    return DeepgramClient(api_key="not-needed", environment=environment)


def _ws_url(server_url: str, query: str = "model=aura-2-thalia-en&encoding=linear16") -> str:
    return f"{server_url.replace('http://', 'ws://')}/v1/speak?{query}"


@contextlib.contextmanager
def _raw(server_url: str, query: str = "model=aura-2-thalia-en") -> Iterator[ClientConnection]:
    with connect(_ws_url(server_url, query), additional_headers=HEADERS, max_size=None) as ws:
        yield ws


def _send(ws: ClientConnection, **message: Any) -> None:
    ws.send(json.dumps(message))


def _until(ws: ClientConnection, kind: str) -> tuple[bytes, list[dict[str, Any]]]:
    """Read until a message of ``kind``: the audio before it and every message (it last)."""
    audio = bytearray()
    messages: list[dict[str, Any]] = []
    while True:
        frame = ws.recv(timeout=60)
        if isinstance(frame, bytes):
            audio += frame
            continue
        messages.append(json.loads(frame))
        if messages[-1]["type"] == kind:
            return bytes(audio), messages


def _closed(ws: ClientConnection) -> tuple[bytes, list[dict[str, Any]], int | None]:
    """Read until the server closes: audio, messages and the close code."""
    audio = bytearray()
    messages: list[dict[str, Any]] = []
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            frame = ws.recv(timeout=60)
            if isinstance(frame, bytes):
                audio += frame
            else:
                messages.append(json.loads(frame))
    received = closed.value.rcvd
    return bytes(audio), messages, None if received is None else received.code


# -- the official SDK -----------------------------------------------------------------------------


def test_sdk_speaks_turns_and_gets_flushed_with_counted_sequence_ids(server_url: str) -> None:
    with _sdk(server_url).speak.v1.connect(
        model="aura-2-thalia-en", encoding="linear16", sample_rate=16000
    ) as socket:
        assert isinstance(socket, V1SocketClient)
        first = socket.recv()
        assert isinstance(first, SpeakV1Metadata) and first.request_id
        for turn, text in enumerate(("Hello there, how are you?", "Fine, thank you.")):
            socket.send_text(SpeakV1Text(text=text))
            socket.send_flush()
            audio = bytearray()
            while True:
                message = socket.recv()
                if isinstance(message, bytes):
                    audio += message
                    continue
                assert isinstance(message, SpeakV1Flushed), message
                assert message.type == "Flushed" and message.sequence_id == turn
                break
            # 16-bit samples at 16 kHz: at least half a second of speech, whole samples.
            assert len(audio) > 16000 and len(audio) % 2 == 0
        socket.send_close()
        # Close ends the input: the server closes normally, with nothing more to say.
        assert list(socket) == []


def test_sdk_clear_stops_the_turn_and_is_answered_with_cleared(server_url: str) -> None:
    with _sdk(server_url).speak.v1.connect(model="aura-asteria-en", encoding="linear16") as socket:
        assert isinstance(socket.recv(), SpeakV1Metadata)
        socket.send_text(SpeakV1Text(text=SENTENCES * 4))
        socket.send_flush()
        assert isinstance(socket.recv(), bytes)  # the turn is being spoken
        socket.send_clear()
        while True:
            message = socket.recv()
            if isinstance(message, bytes):
                continue  # audio sent before the Clear took effect
            # No Flushed for the Flush the Clear overtook: Cleared, counted after it. (The SDK
            # reads both answers, which have the same fields, as its SpeakV1Flushed model.)
            assert isinstance(message, SpeakV1Flushed | SpeakV1Cleared), message
            assert message.type == "Cleared" and message.sequence_id == 1
            break
        socket.send_text(SpeakV1Text(text="A new answer."))
        socket.send_flush()
        audio = bytearray()
        while not isinstance(message := socket.recv(), SpeakV1Flushed):
            assert isinstance(message, bytes)
            audio += message
        assert message.type == "Flushed" and message.sequence_id == 2 and len(audio) > 0
        socket.send_close()
        assert list(socket) == []


# -- what Pipecat and LiveKit send ----------------------------------------------------------------


def test_pipecat_flow_sentences_then_flush_and_clear_on_interruption(server_url: str) -> None:
    # Pipecat: query model/encoding/sample_rate, a Speak per sentence (trailing space), Flush at
    # the end of the LLM response; Clear on interruption; Close before it closes the socket.
    query = "model=aura-2-helena-en&encoding=linear16&sample_rate=24000"
    with _raw(server_url, query) as ws:
        (metadata,) = _until(ws, "Metadata")[1]
        assert metadata["model_name"] and metadata["model_uuid"]
        _send(ws, type="Speak", text="Hello! ")
        _send(ws, type="Speak", text="How can I help you today? ")
        _send(ws, type="Flush")
        audio, messages = _until(ws, "Flushed")
        assert messages == [{"type": "Flushed", "sequence_id": 0}] and len(audio) > 24000
        _send(ws, type="Speak", text=SENTENCES)
        assert isinstance(ws.recv(timeout=60), bytes)  # speaking before any Flush
        _send(ws, type="Clear")
        _, messages = _until(ws, "Cleared")
        assert messages == [{"type": "Cleared", "sequence_id": 1}]
        _send(ws, type="Close")
        audio, messages, code = _closed(ws)
        assert (audio, messages, code) == (b"", [], 1000)


def test_livekit_flow_word_by_word_on_a_reused_connection(server_url: str) -> None:
    # LiveKit: a pooled connection; each segment is a Speak per word ("word ") and a Flush,
    # waiting for Flushed; when the pool closes it: Flush, Close, then waits for one message.
    query = "encoding=linear16&model=aura-2-andromeda-en&sample_rate=24000&mip_opt_out=false"
    with _raw(server_url, query) as ws:
        _until(ws, "Metadata")
        for segment in range(2):
            for word in ("This", "is", "a", "segment", "spoken", "word", "by", "word."):
                _send(ws, type="Speak", text=f"{word} ")
            _send(ws, type="Flush")
            audio, messages = _until(ws, "Flushed")
            assert messages == [{"type": "Flushed", "sequence_id": segment}] and audio
        _send(ws, type="Flush")
        _send(ws, type="Close")
        audio, messages, code = _closed(ws)
        assert messages == [{"type": "Flushed", "sequence_id": 2}] and code == 1000


def test_close_speaks_the_text_not_yet_flushed(server_url: str) -> None:
    with _raw(server_url, "encoding=mulaw") as ws:
        _until(ws, "Metadata")
        _send(ws, type="Speak", text="Goodbye for now.")
        _send(ws, type="Close")
        audio, messages, code = _closed(ws)
        # mu-law at 8 kHz: one byte a sample; a short sentence is far more than 0.3 s.
        assert len(audio) > 2400 and messages == [] and code == 1000


def test_audio_starts_before_any_flush(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]],
) -> None:
    # No idle flush on this server: audio before the Flush can only come from the segmenter.
    with server_factory(workers=1, idle_flush_s=None) as url, _raw(url) as ws:
        _until(ws, "Metadata")
        _send(ws, type="Speak", text=SENTENCES)
        assert isinstance(ws.recv(timeout=60), bytes)
        _send(ws, type="Close")
        _, messages, code = _closed(ws)
        assert messages == [] and code == 1000


# -- refusals and errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "status", "err_code"),
    [
        ("encoding=mp3", 400, "INVALID_QUERY_PARAMETER"),
        ("sample_rate=32000", 400, "INVALID_QUERY_PARAMETER"),
        ("model=nova-3", 400, "INVALID_QUERY_PARAMETER"),
    ],
)
def test_a_refused_query_fails_the_handshake_as_deepgram_does(
    server_url: str, query: str, status: int, err_code: str
) -> None:
    with pytest.raises(InvalidStatus) as refused, _raw(server_url, query):
        pytest.fail("the handshake should have been refused")
    response = refused.value.response
    assert response.status_code == status
    body = json.loads(response.body or b"{}")
    assert body["err_code"] == err_code and body["err_msg"]
    assert response.headers["dg-error"] and body["request_id"] == response.headers["dg-request-id"]


def test_a_full_server_refuses_the_handshake_with_429(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]],
) -> None:
    with server_factory(workers=1, max_streams=1) as url, _raw(url) as first:
        _until(first, "Metadata")
        _send(first, type="Speak", text="Holding the only stream. ")  # its turn takes the slot
        assert isinstance(first.recv(timeout=60), bytes)
        with pytest.raises(InvalidStatus) as refused, _raw(url):
            pytest.fail("the handshake should have been refused")
        response = refused.value.response
        assert response.status_code == 429 and response.headers["retry-after"]
        assert json.loads(response.body or b"{}")["err_code"] == "TOO_MANY_REQUESTS"
        _send(first, type="Close")
        _closed(first)


def test_a_refused_handshake_is_a_completed_one_not_an_error(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]],
) -> None:
    # uvicorn logged "ASGI callable returned without completing handshake" at error level for
    # every handshake answered with an HTTP response: one error a refusal, in a flood of them.
    errors: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = errors.append  # type: ignore[method-assign]
    logger = logging.getLogger("uvicorn.error")  # configured as the server starts: then
    with server_factory(workers=1, max_streams=1) as url, _raw(url) as first:
        logger.addHandler(handler)
        try:
            _until(first, "Metadata")
            _send(first, type="Speak", text="Holding the only stream. ")
            assert isinstance(first.recv(timeout=60), bytes)
            for _ in range(3):
                with pytest.raises(InvalidStatus) as refused, _raw(url):
                    pytest.fail("the handshake should have been refused")
                assert refused.value.response.status_code == 429
            _send(first, type="Close")
            _closed(first)
        finally:
            logger.removeHandler(handler)
    assert [record.getMessage() for record in errors] == []


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("not json", 1008),
        (json.dumps({"type": "Finalize"}), 1008),
        (b"\x00\x01", 1008),
        (json.dumps({"type": "Speak", "text": "x" * 2001}), 1009),
    ],
)
def test_bad_messages_get_an_error_and_a_close(
    server_url: str, frame: str | bytes, code: int
) -> None:
    with _raw(server_url) as ws:
        _until(ws, "Metadata")
        ws.send(frame)
        _, messages, closed = _closed(ws)
        (error,) = messages
        assert error["type"] == "Error" and error["code"] and error["description"]
        assert closed == code
